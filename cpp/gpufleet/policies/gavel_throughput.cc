// Gavel's maximum total throughput (Narayanan et al., OSDI 2020, §4.2; max_sum_throughput.py,
// ThroughputSumWithPerf): maximise sum_j sum_m rate_jm X_jm over the family's allocation LP
// (gavel_allocation_lp.h), realised by its rounds (gavel_round_policy.h). Gavel sums raw steps/s
// (so in the Gavel-compatible mode, where rates are steps/s, models with many cheap steps win);
// the default mode sums reference work per second. Many allocations reach the maximum; the centre
// of the optimal face is taken, as Gavel's interior-point solver ends near it.
#include <map>
#include <utility>
#include <vector>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/gavel_allocation_lp.h"
#include "gpufleet/policies/gavel_round_policy.h"
#include "gpufleet/policies/lp_centre.h"

namespace gpufleet::jobtime {
namespace {

class GavelThroughput : public GavelRoundPolicy {
 public:
  using GavelRoundPolicy::GavelRoundPolicy;

 protected:
  // Jobs with the same GPU count and rates are one class (the program is symmetric in them and
  // its centre gives them equal shares), so the LP stays small however many jobs are active.
  absl::StatusOr<Allocation> Allocate(const AllocationInput& in) override {
    AllocationInput classes = in;
    classes.jobs.clear();
    std::vector<int> copies, class_of;
    std::map<std::pair<int, std::vector<double>>, int> index;
    for (const AllocationJob& j : in.jobs) {
      auto [it, fresh] = index.emplace(std::make_pair(j.gpus, j.rate), static_cast<int>(copies.size()));
      if (fresh) {
        classes.jobs.push_back(j);
        copies.push_back(0);
      }
      ++copies[it->second];
      class_of.push_back(it->second);
    }
    AllocationLp lp(classes, 0, copies);
    std::vector<double> c(lp.vars(), 0.0);
    for (size_t k = 0; k < classes.jobs.size(); ++k)
      for (size_t m = 0; m < in.capacity.size(); ++m)
        if (lp.used(k, m)) c[lp.var(k, m)] = copies[k] * classes.jobs[k].rate[m];
    ASSIGN_OR_RETURN(LpSolution r, MaximizeLpCentred(lp.a(), lp.b(), c, lp.weights()));
    const Allocation per_class = lp.Unpack(r.x);
    Allocation x;
    for (int k : class_of) x.push_back(per_class[k]);
    return x;
  }
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-throughput",
     .description = "Gavel's maximum total throughput allocation, realised by round priorities "
                    "(OSDI'20)",
     .params = GavelRoundParams(),
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(GavelRoundPolicy::Options o, GavelRoundOptions(p));
      return std::unique_ptr<JobTimePolicy>(new GavelThroughput(o));
    });

}  // namespace
}  // namespace gpufleet::jobtime
