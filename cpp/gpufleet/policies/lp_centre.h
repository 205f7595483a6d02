// The centre of an LP's optimal face. A simplex solver (CLP, lp_solver.h) ends at a vertex; an
// interior-point solver (Gavel runs cvxpy with ECOS) follows the central path and ends near its
// limit, the analytic centre of the optimal face. When the optimum is not unique (Gavel's LPs
// maximise only the smallest share, or only ask for feasibility) the two points differ, and a
// scheduler realising the allocation behaves differently: with every GPU type looking the same, the
// centre spreads each job over the types where a vertex piles it onto one. This computes that limit
// deliberately: CLP finds the optimal value, a phase-I LP a strictly interior start, and a log-barrier
// path-following (damped Newton on barrier_system.h's systems) drives the barrier weight to ~0.
#ifndef GPUFLEET_POLICIES_LP_CENTRE_H_
#define GPUFLEET_POLICIES_LP_CENTRE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/policies/lp_solver.h"

namespace gpufleet::jobtime {

struct CentreWeights {
  // Barrier weight of each row of A (empty: 1 each; each > 0) and of each x_k >= 0 (empty: 1
  // each; 0 leaves x_k free of that constraint, as an epigraph variable is in Gavel's LPs). A class
  // of n identical jobs written once weighs n, so the point is the centre of the problem with every
  // job written out.
  std::vector<double> rows;
  std::vector<double> columns;
};

// maximise c.x s.t. A x <= b, x >= 0 (MaximizeLp's form and checks), returning the point the
// central path tends to: the analytic centre of the optimal face (with c = 0, of the feasible set).
// FailedPrecondition when the LP is infeasible or unbounded, or when its feasible set has no
// interior point (then there is no central path); InvalidArgument for weights of the wrong length
// or negative ones (a row's must be positive).
absl::StatusOr<LpSolution> MaximizeLpCentred(const std::vector<std::vector<double>>& a,
                                             const std::vector<double>& b,
                                             const std::vector<double>& c,
                                             const CentreWeights& weights = {});

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_LP_CENTRE_H_
