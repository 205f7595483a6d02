// Gavel's maximum total throughput (Narayanan et al., OSDI 2020, §4.2; max_sum_throughput.py,
// ThroughputSumWithPerf): maximise sum_j sum_m rate_jm X_jm over the family's allocation LP
// (gavel_allocation_lp.h), realised by its rounds (gavel_round_policy.h). Gavel sums raw steps/s
// (so in the Gavel-compatible mode, where rates are steps/s, models with many cheap steps win);
// the default mode sums reference work per second. Many allocations reach the maximum; the centre
// of the optimal face is taken, as Gavel's interior-point solver ends near it.
#include <utility>

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
  absl::StatusOr<Allocation> Allocate(const AllocationInput& in) override {
    AllocationLp lp(in, 0);
    std::vector<double> c(lp.vars(), 0.0);
    for (size_t j = 0; j < in.jobs.size(); ++j)
      for (size_t m = 0; m < in.capacity.size(); ++m)
        if (lp.used(j, m)) c[lp.var(j, m)] = in.jobs[j].rate[m];
    ASSIGN_OR_RETURN(LpSolution r, MaximizeLpCentred(lp.a(), lp.b(), c, lp.weights()));
    return lp.Unpack(r.x);
  }
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-throughput",
     .description = "Gavel's maximum total throughput allocation, realised by round priorities "
                    "(OSDI'20)",
     .params = GavelRoundParams(),
     .capabilities = {"preemptive"}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(GavelRoundPolicy::Options o, GavelRoundOptions(p));
      return std::unique_ptr<JobTimePolicy>(new GavelThroughput(o));
    });

}  // namespace
}  // namespace gpufleet::jobtime
