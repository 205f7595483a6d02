// spread: Koordinator's LeastAllocated. The least allocated node wins; on it, the device with the
// most free memory (then core), so load spreads over cards.
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/node_score.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

class Spread : public AllocationScoredStrategy {
 public:
  Spread() : AllocationScoredStrategy(-1) {}
  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    auto free_sum = [&](const std::vector<int>& set) {
      int64_t s = 0;
      for (int d : set) s += v.free_memory(d) + v.free_core(d);
      return s;
    };
    return ChooseByOrder(
        v, r.count, domains,
        [&](int a, int b) {
          if (v.free_memory(a) != v.free_memory(b)) return v.free_memory(a) > v.free_memory(b);
          return v.free_core(a) > v.free_core(b);
        },
        [&](const std::vector<int>& a, const std::vector<int>& b) {
          return free_sum(a) > free_sum(b);
        },
        chosen);
  }
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "spread",
     .description = "least allocated node, most free device (Koordinator LeastAllocated)",
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      return std::unique_ptr<PlacementStrategy>(new Spread());
    });

}  // namespace
}  // namespace gpufleet
