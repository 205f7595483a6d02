// priority: jobs with a higher priority go first, and so do tasks with a higher pod priority;
// a task may preempt tasks of jobs with a strictly lower priority (Volcano's priority plugin).
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

class Priority : public Plugin {
 public:
  void OnSessionOpen(Session& s) override {
    s.AddJobOrderFn(name(), [&s](int a, int b) {
      int pa = s.job(a).priority(), pb = s.job(b).priority();
      return pa == pb ? 0 : (pa > pb ? -1 : 1);
    });
    s.AddTaskOrderFn(name(), [&s](int a, int b) {
      int pa = s.task(a).pod->priority, pb = s.task(b).pod->priority;
      return pa == pb ? 0 : (pa > pb ? -1 : 1);
    });
    s.AddPreemptableFn(name(), [&s](const TaskInfo& preemptor, const std::vector<int>& cands) {
      std::vector<int> out;
      const int p = s.job(preemptor.job).priority();
      for (int c : cands)
        if (s.job(s.task(c).job).priority() < p) out.push_back(c);
      return out;
    });
  }
};

GPUFLEET_REGISTER(Plugin,
    {.name = "priority",
     .description = "job and task order by priority; preempts strictly lower-priority jobs"},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(new Priority());
    });

}  // namespace
}  // namespace gpufleet::engine
