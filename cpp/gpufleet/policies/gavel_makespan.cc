// Gavel's minimum total duration, i.e. makespan (Narayanan et al., OSDI 2020, §4.2;
// min_total_duration.py, MinTotalDurationPolicyWithPerf): the smallest T for which an allocation
// lets every active job finish its remaining work within T,
//   sum_m rate_jm X_jm >= remaining_j / T   (every job j),
// over the family's allocation LP (gavel_allocation_lp.h). As Gavel: a binary search on T in
// [100 s, 10^6 s] (ten times wider each time nothing in it is feasible) until 1.05 x lower >=
// upper, each feasibility check an LP; the allocation is the last feasible one, which an
// interior-point solver returns at the analytic centre of the feasible set, so that is the point
// taken here (lp_centre.h). aware=false gives every model the job's reference-model rate (Gavel's
// v100). packing=true is Gavel's min_total_duration_packed: the same search over the allocation LP
// with packed pairs, each job's rate counting its pairs' co-located rates (PolicyWithPacking).
// Realised by the family's rounds (gavel_round_policy.h).
#include <utility>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/gavel_allocation_lp.h"
#include "gpufleet/policies/gavel_round_policy.h"
#include "gpufleet/policies/lp_centre.h"
#include "gpufleet/policies/lp_solver.h"

namespace gpufleet::jobtime {
namespace {

// The allocation LP with every job's throughput row for horizon `t`.
AllocationLp Feasibility(const AllocationInput& in, double t) {
  AllocationLp lp(in, 0);
  for (size_t j = 0; j < in.jobs.size(); ++j) {
    std::vector<double> row(lp.vars(), 0.0);
    lp.AddThroughput(in, static_cast<int>(j), -1.0, &row);
    lp.AddRow(std::move(row), -in.jobs[j].remaining / t);
  }
  return lp;
}

bool Feasible(const AllocationInput& in, double t) {
  AllocationLp lp = Feasibility(in, t);
  return MaximizeLp(lp.a(), lp.b(), std::vector<double>(lp.vars(), 0.0)).ok();
}

class GavelMakespan : public GavelRoundPolicy {
 public:
  using GavelRoundPolicy::GavelRoundPolicy;

 protected:
  absl::StatusOr<Allocation> Allocate(const AllocationInput& in) override {
    double lo = 100, hi = 1e6, widest = 1e6, found = -1;
    while (found < 0) {
      while (1.05 * lo < hi) {
        const double t = (lo + hi) / 2;
        if (Feasible(in, t)) {
          found = t;
          hi = t;
        } else {
          lo = t;
        }
      }
      if (found >= 0) break;
      if (widest > 1e15)
        return absl::FailedPreconditionError(
            "gavel-makespan: no horizon up to 1e15 s lets every job finish");
      lo = widest;
      hi = widest * 10;
      widest *= 10;
    }
    AllocationLp lp = Feasibility(in, found);
    ASSIGN_OR_RETURN(LpSolution r, MaximizeLpCentred(lp.a(), lp.b(),
                                                     std::vector<double>(lp.vars(), 0.0),
                                                     lp.weights()));
    return lp.Unpack(r.x);
  }
  AgnosticRate agnostic_rate() const override { return AgnosticRate::kReference; }
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-makespan",
     .description = "Gavel's minimum total duration (makespan) allocation, realised by round "
                    "priorities (OSDI'20)",
     .params = GavelRoundParams(/*sticky=*/true, /*packing=*/true),
     .traits = {.needs_durations = true, .preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(GavelRoundPolicy::Options o, GavelRoundOptions(p));
      return std::unique_ptr<JobTimePolicy>(new GavelMakespan(o));
    });

}  // namespace
}  // namespace gpufleet::jobtime
