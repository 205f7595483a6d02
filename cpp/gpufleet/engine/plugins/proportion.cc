// proportion: queues' deserved shares by weight (Volcano's proportion plugin). Per resource, the
// cluster's capacity is water-filled over the queues by weight, each capped by its capability and
// by its demand (what its valid jobs hold plus what they still ask for), so shares never exceed
// demand or capability and add up to the capacity whenever demand exceeds it. Queues with a lower
// allocated/deserved share go first; a queue whose allocation reaches its deserved share in every
// resource is overused and gets nothing more this cycle; tasks may not push a queue above its
// capability; other queues may reclaim from a queue above its share.
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/water_fill.h"

namespace gpufleet::engine {
namespace {

double Share(const QueueInfo& q) {
  double share = 0;
  for (int r = 0; r < kNumResources; ++r) {
    double d = q.deserved[r], a = q.allocated[r];
    share = std::max(share, d > 0 ? a / d : (a > 1e-9 ? 1.0 : 0.0));
  }
  return share;
}

class Proportion : public Plugin {
 public:

  void OnSessionOpen(Session& s) override {
    s.AddQueueOrderFn(name(), [&s](int a, int b) {
      double sa = Share(s.queue(a)), sb = Share(s.queue(b));
      if (std::fabs(sa - sb) <= 1e-9) return 0;
      return sa < sb ? -1 : 1;
    });
    s.AddOverusedFn(name(), [](const QueueInfo& q) { return q.deserved.LessEqual(q.allocated); });
    s.AddAllocatableFn(name(), [](const QueueInfo& q, const TaskInfo& t) {
      return (q.allocated + t.request).LessEqual(q.spec->capability);
    });
    s.AddEnqueueableFn(name(), [&s](const JobInfo& j) -> absl::Status {
      const QueueInfo& q = s.queue(j.queue);
      if (!j.min_request.LessEqual(s.total()))
        return absl::FailedPreconditionError(
            absl::StrFormat("its minimum (%s) exceeds the cluster (%s)", j.min_request.ToString(),
                            s.total().ToString()));
      if (!(q.allocated + q.inqueue + j.min_request).LessEqual(q.spec->capability))
        return absl::FailedPreconditionError(
            absl::StrFormat("queue %s would exceed its capability (%s)", q.name(),
                            q.spec->capability.ToString()));
      return absl::OkStatus();
    });
    s.AddReclaimableFn(name(), [&s](const TaskInfo&, const std::vector<int>& cands) {
      absl::flat_hash_map<int, Resources> left;
      std::vector<int> out;
      for (int c : cands) {
        const TaskInfo& t = s.task(c);
        const QueueInfo& q = s.queue(s.job(t.job).queue);
        if (!q.spec->reclaimable) continue;
        auto [it, fresh] = left.try_emplace(q.id, q.allocated);
        // Take it back only while the queue is above its share in a resource the task uses.
        bool above = false;
        for (int r = 0; r < kNumResources; ++r)
          above |= t.request[r] > 0 && !ApproxLessEqual(it->second[r], q.deserved[r]);
        if (!above) continue;
        out.push_back(c);
        it->second -= t.request;
      }
      return out;
    });
  }

  void OnSessionReady(Session& s) override {
    const int n = static_cast<int>(s.queues().size());
    std::vector<double> weights(n);
    for (int q = 0; q < n; ++q) weights[q] = s.queue(q).spec->weight;
    for (int r = 0; r < kNumResources; ++r) {
      std::vector<double> caps(n);
      for (int q = 0; q < n; ++q)
        caps[q] = std::min(s.queue(q).request[r], s.queue(q).spec->capability[r]);
      std::vector<double> deserved = WaterFill(s.total()[r], weights, caps);
      for (int q = 0; q < n; ++q) s.queue(q).deserved[r] = deserved[q];
    }
  }
};

GPUFLEET_REGISTER(Plugin,
    {.name = "proportion",
     .description = "queue deserved shares by weight (water-filling, capped by capability and "
                    "demand)"},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(new Proportion());
    });

}  // namespace
}  // namespace gpufleet::engine
