// The linear programs that allocation policies solve each round (Gavel's max-min fairness over
// allocation fractions): maximise c.x subject to A x <= b, x >= 0, solved with the simplex method
// of COIN-OR CLP (https://github.com/coin-or/Clp, linked from the system's coinor-libclp). Every
// call builds and frees its own CLP model, so calls from many threads share no solver state.
#ifndef GPUFLEET_POLICIES_LP_SOLVER_H_
#define GPUFLEET_POLICIES_LP_SOLVER_H_

#include <vector>

#include "absl/status/statusor.h"

namespace gpufleet::jobtime {

struct LpSolution {
  double objective = 0;   // c.x at `x`
  std::vector<double> x;  // one value per column of A, each >= 0
  int iterations = 0;     // simplex iterations CLP took
};

// Entries larger in magnitude than this are refused: CLP (like most LP solvers) reads them as
// infinite, which would silently change the problem.
inline constexpr double kLpMaxMagnitude = 1e20;

// `a` is row-major: b.size() rows of c.size() entries each. Errors: InvalidArgument naming the
// entry or shape at fault (ragged A, sizes that disagree, a value that is not finite or exceeds
// kLpMaxMagnitude, max_iterations < 0); FailedPrecondition when the LP is infeasible or
// unbounded; ResourceExhausted when max_iterations is reached; Internal if CLP gives up.
absl::StatusOr<LpSolution> MaximizeLp(const std::vector<std::vector<double>>& a,
                                      const std::vector<double>& b, const std::vector<double>& c,
                                      int max_iterations = 100000);

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_LP_SOLVER_H_
