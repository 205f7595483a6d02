// binpack: gpushare's best fit and Koordinator's MostAllocated. The node that ends up most
// allocated wins; on it, the fitting device with the least free memory (then core) is taken,
// which keeps whole cards free for whole-card pods.
#include <numeric>

#include "gpufleet/core/status_macros.h"

#include "gpufleet/placement/node_score.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

int64_t FreeSum(const NodeView& v, const std::vector<int>& set) {
  int64_t s = 0;
  for (int d : set) s += v.free_memory(d) + v.free_core(d);
  return s;
}

class Binpack : public AllocationScoredStrategy {
 public:
  Binpack() : AllocationScoredStrategy(+1) {}
  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    return ChooseByOrder(
        v, r.count, domains,
        BestFitLess(v),
        [&](const std::vector<int>& a, const std::vector<int>& b) {
          return FreeSum(v, a) < FreeSum(v, b);
        },
        chosen);
  }
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "binpack",
     .description = "best fit: most allocated node, least free fitting device (gpushare, "
                    "Koordinator MostAllocated)",
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      return std::unique_ptr<PlacementStrategy>(new Binpack());
    });

}  // namespace
}  // namespace gpufleet
