// A small dense simplex for the LPs that allocation policies solve each round (Gavel's max-min
// fairness over allocation fractions): maximise c.x subject to A x <= b, x >= 0, with b >= 0 so
// that the slack basis is feasible and one phase suffices. Dantzig's rule, switching to Bland's
// (which cannot cycle) after a run of degenerate pivots. Sized for hundreds of rows; the tableau
// is dense.
#ifndef GPUFLEET_POLICIES_LP_SIMPLEX_H_
#define GPUFLEET_POLICIES_LP_SIMPLEX_H_

#include <vector>

#include "absl/status/statusor.h"

namespace gpufleet::jobtime {

struct LpSolution {
  double objective = 0;
  std::vector<double> x;
  int pivots = 0;
};

// `a` is row-major (rows = b.size(), each of c.size() entries). Errors: InvalidArgument for bad
// input (shapes, b not finite and >= 0), FailedPrecondition "unbounded", ResourceExhausted
// "pivot limit".
absl::StatusOr<LpSolution> MaximizeLp(const std::vector<std::vector<double>>& a,
                                      const std::vector<double>& b, const std::vector<double>& c,
                                      int max_pivots = 100000);

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_LP_SIMPLEX_H_
