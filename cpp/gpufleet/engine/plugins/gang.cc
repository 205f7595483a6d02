// gang: a job runs only when at least `min_available` of its tasks can run at once (Volcano's
// gang plugin, after kube-batch's PodGroup.minMember). A job with fewer tasks than that is invalid;
// jobs still short of their gang go before jobs already running; only tasks above a running job's
// minimum may be preempted or reclaimed (or any task when the minimum is 1), so eviction never
// leaves a gang partly running.
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

class Gang : public Plugin {
 public:
  void OnSessionOpen(Session& s) override {
    s.AddJobValidFn(name(), [](const JobInfo& j) -> absl::Status {
      if (static_cast<int>(j.tasks.size()) < j.min_available())
        return absl::FailedPreconditionError(absl::StrFormat(
            "job has %d tasks, fewer than min_available %d", j.tasks.size(), j.min_available()));
      return absl::OkStatus();
    });
    s.AddJobReadyFn(name(), [](const JobInfo& j) { return j.occupied >= j.min_available(); });
    s.AddJobOrderFn(name(), [&s](int a, int b) {
      bool ra = s.job(a).occupied >= s.job(a).min_available();
      bool rb = s.job(b).occupied >= s.job(b).min_available();
      return ra == rb ? 0 : (ra ? 1 : -1);
    });
    auto surplus = [&s](const TaskInfo&, const std::vector<int>& cands) {
      absl::flat_hash_map<int, int> occupied;
      std::vector<int> out;
      for (int c : cands) {
        const JobInfo& j = s.job(s.task(c).job);
        auto [it, fresh] = occupied.try_emplace(j.id, j.occupied);
        if (j.min_available() <= 1 || it->second - 1 >= j.min_available()) {
          out.push_back(c);
          --it->second;
        }
      }
      return out;
    };
    s.AddPreemptableFn(name(), surplus);
    s.AddReclaimableFn(name(), surplus);
  }
};

GPUFLEET_REGISTER(Plugin,
    {.name = "gang",
     .description = "all-or-nothing placement of min_available tasks"},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(new Gang());
    });

}  // namespace
}  // namespace gpufleet::engine
