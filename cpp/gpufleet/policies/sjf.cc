// Shortest job first with oracle durations, non-preemptive: among pending jobs the shortest
// (reference seconds) starts first; jobs that do not fit are skipped. A classic baseline of
// Tiresias (Gu et al., NSDI 2019) and Gandiva-era evaluations.
#include <set>
#include <tuple>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/sim/policy.h"

namespace gpufleet::sim {
namespace {

class Sjf : public Policy {
 public:
  void OnArrival(int job, const SimView& view) override {
    const JobSpec& s = view.job(job).spec;
    pending_.insert({s.duration, s.submit_time, job});
  }
  void Schedule(const SimView& view, std::vector<Assignment>* plan) override {
    KeepUnlistedRunning();  // non-preemptive: the plan lists only the starts
    Filler fill(view, plan, /*from_current=*/true);
    // A job leaves the set once it is seen running (or gone), not when it is planned: the engine
    // may fail to place a planned job, which then keeps its place.
    for (auto it = pending_.begin(); it != pending_.end() && fill.total_free() > 0;) {
      int job = std::get<2>(*it);
      if (view.job(job).state != JobState::kPending)
        it = pending_.erase(it);
      else {
        fill.TryPlace(job, ModelChoice::kFirstFit);
        ++it;
      }
    }
  }

 private:
  std::set<std::tuple<double, double, int>> pending_;
};

GPUFLEET_REGISTER(Policy, "sjf", "shortest job first, oracle durations, non-preemptive",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<Policy>> {
                    RETURN_IF_ERROR(CheckKnownParams(p, "sjf", {}));
                    return std::unique_ptr<Policy>(new Sjf());
                  });

}  // namespace
}  // namespace gpufleet::sim
