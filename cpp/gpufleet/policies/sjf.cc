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
    Filler fill(view, plan);
    for (int i : *view.running) fill.Take(i, view.job(i).model);
    for (auto it = pending_.begin(); it != pending_.end() && fill.total_free() > 0;) {
      if (fill.TryPlace(std::get<2>(*it), ModelChoice::kFirstFit) >= 0)
        it = pending_.erase(it);
      else
        ++it;
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
