// treereclaim: reclaim across a queue tree. Queues take turns by queue order; each starving job
// may evict running tasks of other queues that the reclaimable plugins name (queuetree: by the
// tree's rules, never below a queue's deserved amount, never closing a preemption cycle), and
// its queue's quota is checked after the victims leave, since a reclaim frees quota as well as
// devices (a borrowing Kueue queue needs its cohort's room, issue 9466). Unlike reclaim, an
// overused queue still gets its turn: the tree's rules decide.
#include <algorithm>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/actions/evict_to_fit.h"

namespace gpufleet::engine {
namespace {

class TreeReclaim : public Action {
 public:
  void Execute(Session& s) override {
    if (!s.HasReclaimable()) return;
    std::vector<int> order;
    for (const QueueInfo& q : s.queues()) order.push_back(q.id);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s.QueueLess(a, b); });
    for (int q : order)
      for (int j : StarvingJobs(s, q))
        EvictToFit(s, j, VictimScope::kOtherQueues, QuotaCheck::kAfterVictims);
  }
};

GPUFLEET_REGISTER(Action,
    {.name = "treereclaim",
     .description = "reclaim across a queue tree: victims by the tree's rules, quota checked "
                    "once they leave",
     .traits = {.places_tasks = true, .evicts = true, .needs = {Point::kReclaimable}}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Action>> {
      return std::unique_ptr<Action>(new TreeReclaim());
    });

}  // namespace
}  // namespace gpufleet::engine
