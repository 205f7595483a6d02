// FIFO: jobs start in arrival order and run to completion without preemption. By default the head
// of the queue blocks the jobs behind it, as the "fifo" scheduler of Tiresias' simulator (Gu et
// al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019); with
// backfill=true a later job that fits starts ahead of a blocked head.
#include <deque>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {
namespace {

class Fifo : public JobTimePolicy {
 public:
  explicit Fifo(bool backfill) : backfill_(backfill) {}
  void OnArrival(int job, const JobTimeView&) override { pending_.push_back(job); }
  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    // Non-preemptive: running jobs keep their GPUs, so the plan lists only the starts.
    KeepUnlistedRunning();
    Filler fill(view, plan, /*from_current=*/true);
    // A job leaves the queue once it is seen running (or gone), not when it is planned: the
    // engine may fail to place a planned job, which then keeps its place in line.
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (view.job(*it).state != JobState::kPending) {
        it = pending_.erase(it);
        continue;
      }
      if (fill.total_free() == 0) break;
      if (fill.TryPlace(*it, ModelChoice::kAgnostic) >= 0) {
        ++it;
      } else if (!backfill_) {
        break;
      } else {
        ++it;
      }
    }
  }

 private:
  bool backfill_;
  std::deque<int> pending_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "fifo",
     .description = "first in, first out; non-preemptive (Tiresias NSDI'19 baseline)",
     .params = {{"backfill", ParamType::kBool, false,
                 "let later jobs start when the head does not fit"}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(bool backfill, p.Get<bool>("backfill"));
      return std::unique_ptr<JobTimePolicy>(new Fifo(backfill));
    });

}  // namespace
}  // namespace gpufleet::jobtime
