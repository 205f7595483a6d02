// gpu-packing: the GpuPacking baseline of Weng et al. (USENIX ATC 2023, "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"). Three tiers, best first:
// (1) the pod fits on GPUs that are already partly used (score 100 minus a tenth of their free
// percent, at least 50: fuller GPUs first); (2) it must open idle GPUs on a node that is already in
// use (50 minus the idle GPUs it opens, at least 33); (3) the node is entirely idle (33 minus its GPU
// count). Integer scores as in the paper's simulator; equal scores tie (the replay breaks ties at
// random). CPU-only pods score 0 everywhere, so they land on a random feasible node. On the node,
// GPUs are taken by best fit.
#include <algorithm>
#include <numeric>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/strategies/gpu_share.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

class GpuPacking : public PlacementStrategy {
 public:
  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    if (t.count == 0) return 0.0;
    const GpuSlots s = SlotsOf(v);
    int idle = 0;
    for (int i = 0; i < s.n; ++i) idle += v.untouched(s.device[i]) ? 1 : 0;
    if (idle == s.n) return std::max(100 / 3 - s.n, s.n);
    // Fitting GPUs, least free first (stable: ties in device order).
    std::vector<int> order(s.n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return s.left[a] < s.left[b]; });
    int need = t.count, opened = 0, free_percent = 0;
    for (int i : order) {
      if (need == 0) break;
      if (s.left[i] < t.core || !ModelAccepted(t, v, s.device[i])) continue;
      if (t.whole() && !v.untouched(s.device[i])) continue;
      --need;
      if (v.untouched(s.device[i])) ++opened;
      free_percent += s.left[i];
    }
    if (need > 0) return 0.0;
    if (opened > 0) return std::max(100 / 2 - opened, 100 / 3);
    return std::max(100 - free_percent / 10, 100 / 2);
  }
  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    return ChooseBestFitDevices(v, r, domains, chosen);
  }
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "gpu-packing",
     .description = "partly used GPUs first, then idle GPUs on used nodes, then idle nodes "
                    "(Weng et al., ATC 2023 baseline)",
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      return std::unique_ptr<PlacementStrategy>(new GpuPacking());
    });

}  // namespace
}  // namespace gpufleet
