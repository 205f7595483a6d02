// preempt: within a queue, a starving job's tasks may evict running tasks of other jobs of the
// same queue that the preemptable plugins name (priority: lower priority; gang: only above a
// gang's minimum; drf: jobs with larger shares) (Volcano's preempt action).
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/actions/evict_to_fit.h"

namespace gpufleet::engine {
namespace {

class Preempt : public Action {
 public:
  void Execute(Session& s) override {
    if (!s.HasPreemptable()) return;
    std::vector<int> order;
    for (const QueueInfo& q : s.queues()) order.push_back(q.id);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s.QueueLess(a, b); });
    for (int q : order)
      for (int j : StarvingJobs(s, q)) EvictToFit(s, j, VictimScope::kSameQueue);
  }
};

GPUFLEET_REGISTER(Action,
    {.name = "preempt",
     .description = "within a queue, evict lower-priority tasks for starving jobs",
     .traits = {.places_tasks = true, .evicts = true, .needs = {Point::kPreemptable}}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Action>> {
      return std::unique_ptr<Action>(new Preempt());
    });

}  // namespace
}  // namespace gpufleet::engine
