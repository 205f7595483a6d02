// FIFO: jobs start in arrival order and run to completion without preemption. By default the head
// of the queue blocks the jobs behind it, as the "fifo" scheduler of Tiresias' simulator (Gu et
// al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019); with
// backfill=true a later job that fits starts ahead of a blocked head.
#include <deque>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/sim/policy.h"

namespace gpufleet::sim {
namespace {

class Fifo : public Policy {
 public:
  explicit Fifo(bool backfill) : backfill_(backfill) {}
  void OnArrival(int job, const SimView&) override { pending_.push_back(job); }
  void Schedule(const SimView& view, std::vector<Assignment>* plan) override {
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
      if (fill.TryPlace(*it, ModelChoice::kFirstFit) >= 0) {
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

GPUFLEET_REGISTER(Policy, "fifo", "first in, first out; non-preemptive (Tiresias NSDI'19 baseline)",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<Policy>> {
                    RETURN_IF_ERROR(CheckKnownParams(p, "fifo", {"backfill"}));
                    ASSIGN_OR_RETURN(bool backfill, Param<bool>(p, "fifo", "backfill", false));
                    return std::unique_ptr<Policy>(new Fifo(backfill));
                  });

}  // namespace
}  // namespace gpufleet::sim
