// Shortest job first with oracle durations, non-preemptive: among pending jobs the shortest
// (reference seconds) starts first; jobs that do not fit are skipped. A classic baseline of
// Tiresias (Gu et al., NSDI 2019) and Gandiva-era evaluations.
#include <set>
#include <tuple>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {
namespace {

class Sjf : public JobTimePolicy {
 public:
  void OnArrival(int job, const JobTimeView& view) override {
    const JobSpec& s = view.job(job).spec;
    pending_.insert({s.duration, s.submit_time, job});
  }
  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    KeepUnlistedRunning();  // non-preemptive: the plan lists only the starts
    Filler fill(view, plan, /*from_current=*/true);
    // A job leaves the set once it is seen running (or gone), not when it is planned: the engine
    // may fail to place a planned job, which then keeps its place.
    for (auto it = pending_.begin(); it != pending_.end() && fill.total_free() > 0;) {
      int job = std::get<2>(*it);
      if (view.job(job).state != JobState::kPending)
        it = pending_.erase(it);
      else {
        fill.TryPlace(job, ModelChoice::kAgnostic);
        ++it;
      }
    }
  }

 private:
  std::set<std::tuple<double, double, int>> pending_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "sjf",
     .description = "shortest job first, oracle durations, non-preemptive",
     .traits = {.needs_durations = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      return std::unique_ptr<JobTimePolicy>(new Sjf());
    });

}  // namespace
}  // namespace gpufleet::jobtime
