// backfill: best-effort tasks (no cpu, memory or device requests) go wherever the predicates allow
// (Volcano's backfill action). Gangs still apply: a job's best-effort tasks bind together or not.
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/actions/place_job.h"

namespace gpufleet::engine {
namespace {

class Backfill : public Action {
 public:
  void Execute(Session& s) override {
    std::vector<int> ids;
    for (const JobInfo& j : s.jobs())
      if (j.valid && j.inqueue && !PendingTasks(s, j.id, TaskKind::kBestEffort).empty())
        ids.push_back(j.id);
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return s.JobLess(a, b); });
    for (int j : ids) PlaceJob(s, j, TaskKind::kBestEffort);
  }
};

GPUFLEET_REGISTER(Action,
    {.name = "backfill",
     .description = "place best-effort tasks (no requests)",
     .traits = {.places_tasks = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Action>> {
      return std::unique_ptr<Action>(new Backfill());
    });

}  // namespace
}  // namespace gpufleet::engine
