// reclaim: a queue below its deserved share takes resources back from reclaimable queues above
// theirs (Volcano's reclaim action): its starving jobs may evict tasks of other queues that the
// reclaimable plugins name (proportion: queues above deserved; gang: only above a gang's minimum).
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/actions/evict_to_fit.h"

namespace gpufleet::engine {
namespace {

class Reclaim : public Action {
 public:
  void Execute(Session& s) override {
    if (!s.HasReclaimable()) return;
    std::vector<int> order;
    for (const QueueInfo& q : s.queues()) order.push_back(q.id);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s.QueueLess(a, b); });
    for (int q : order) {
      for (int j : StarvingJobs(s, q)) {
        if (s.Overused(s.queue(q))) break;
        EvictToFit(s, j, VictimScope::kOtherQueues);
      }
    }
  }
};

GPUFLEET_REGISTER(Action,
    {.name = "reclaim",
     .description = "take back resources from queues above their deserved share",
     .traits = {.places_tasks = true, .evicts = true, .needs = {Point::kOverused}}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Action>> {
      return std::unique_ptr<Action>(new Reclaim());
    });

}  // namespace
}  // namespace gpufleet::engine
