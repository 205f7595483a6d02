// Gavel's heterogeneity-aware max-min fairness LP (Narayanan et al., OSDI 2020, §4.1) over job
// classes: jobs with the same GPU count and speeds share one set of variables (the LP is
// symmetric in identical jobs, so some optimum gives them equal shares).
#ifndef GPUFLEET_POLICIES_GAVEL_LP_H_
#define GPUFLEET_POLICIES_GAVEL_LP_H_

#include <vector>

#include "absl/status/statusor.h"

namespace gpufleet::jobtime {

struct ShareClass {
  int jobs = 1;               // identical jobs in the class
  int gpus_per_job = 1;
  std::vector<double> speed;  // per GPU model; 0 = cannot run there
};

struct MaxMinShares {
  double t = 0;                        // the minimum normalised throughput reached
  std::vector<std::vector<double>> x;  // per class, per model: time fraction of one job
};

// maximise t  s.t.  t <= sum_j speed_kj / equal_k * x_kj  (each class k),
//                   sum_j x_kj <= 1,  sum_k jobs_k * gpus_k * x_kj <= capacity_j,  x >= 0,
// where equal_k is the class's throughput under an equal share of the cluster: time share
// min(1, G / (all jobs x gpus_k)) spread over the models by their GPU counts. `centred`: the
// centre of the optimal face (lp_centre.h) instead of CLP's vertex. InvalidArgument for classes
// whose speeds do not match the models or an empty problem; the LP solver's errors otherwise.
absl::StatusOr<MaxMinShares> SolveMaxMinShares(const std::vector<ShareClass>& classes,
                                               const std::vector<int>& capacity,
                                               bool centred = false);

// Gavel's own form of the LP (max_min_fairness.py, MaxMinFairnessPolicyWithPerf, priority weights
// 1): maximise t s.t. t <= gpus_k sum_j speed_kj x_kj / proportional_k, where proportional_k =
// sum_j speed_kj capacity_j / G (its "proportional" share, whatever the number of jobs), with an
// x_kj for every model, also where the class cannot run, and t free; at the centre of the optimal
// face, where Gavel's interior-point solver (ECOS) ends. Errors as SolveMaxMinShares.
absl::StatusOr<MaxMinShares> SolveGavelMaxMin(const std::vector<ShareClass>& classes,
                                              const std::vector<int>& capacity);

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_GAVEL_LP_H_
