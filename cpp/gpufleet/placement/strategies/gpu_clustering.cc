// gpu-clustering: the GpuClustering baseline of Weng et al. (USENIX ATC 2023, "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"): pods with
// the same kind of GPU request (a GPU share, or k whole GPUs) are packed together. Four tiers, best
// first: the node holds only GPU pods of the pod's kind (75-100); it holds that kind among others
// (50-75); it holds no GPU pod (25-50); it holds only other kinds (0-25). Within a tier, fuller
// nodes score higher: 25 * (largest node GPUs - free GPU share) / largest node GPUs, integer as in
// the paper's simulator (equal scores tie; the replay breaks ties at random). CPU-only pods score 0.
//
// Which kinds a node holds is learned from OnBound/OnReleased (PlacementObserver). For a node it
// was never told about, the kinds are estimated from device state: a partly used GPU means shared
// pods, a fully used one a one-GPU pod.
#include <algorithm>
#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/strategies/gpu_share.h"
#include "gpufleet/placement/observer.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

constexpr int kShareKind = 0;  // kinds: 0 = a GPU share, k > 0 = k whole GPUs

int KindOf(const ShareTask& t) { return t.shared() ? kShareKind : t.count; }

class GpuClustering : public PlacementStrategy, public PlacementObserver {
 public:
  explicit GpuClustering(int max_gpus) : max_core_(100 * max_gpus) {}

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    if (t.count == 0) return 0.0;
    const GpuSlots s = SlotsOf(v);
    const int64_t fuller = std::max<int64_t>(0, max_core_ - s.total_left());
    const int64_t within = 25 * fuller / max_core_;
    std::map<int, int> estimated;
    const std::map<int, int>* kinds = &estimated;
    auto it = kinds_.find(v.node->name);
    if (it != kinds_.end()) {
      kinds = &it->second;
    } else {
      for (int i = 0; i < s.n; ++i) {
        if (s.left[i] == 100) continue;
        ++estimated[s.left[i] > 0 ? kShareKind : 1];
      }
    }
    const bool has = kinds->count(KindOf(t)) > 0;
    if (has) return static_cast<double>(within + (kinds->size() == 1 ? 75 : 50));
    return static_cast<double>(within + (kinds->empty() ? 25 : 0));
  }
  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    return ChooseBestFitDevices(v, r, domains, chosen);
  }

  void OnBound(const Node& node, const Pod& pod) override {
    const ShareTask t = TaskOf(pod);
    auto& kinds = kinds_[node.name];  // a node seen once is tracked, even if it holds no GPU pod
    if (t.count > 0) ++kinds[KindOf(t)];
  }
  void OnReleased(const Node& node, const Pod& pod) override {
    const ShareTask t = TaskOf(pod);
    auto it = kinds_.find(node.name);
    if (t.count == 0 || it == kinds_.end()) return;
    auto k = it->second.find(KindOf(t));
    if (k != it->second.end() && --k->second <= 0) it->second.erase(k);
  }

 private:
  int64_t max_core_;
  absl::flat_hash_map<std::string, std::map<int, int>> kinds_;
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "gpu-clustering",
     .description = "pack pods with the same GPU request kind together (Weng et al., ATC 2023 "
                    "baseline)",
     .params = {{.name = "max_gpus", .type = ParamType::kInt, .default_value = 8,
                 .help = "GPUs of the largest node", .range = {.at_least = 1}}},
     // The const calls only read what OnBound/OnReleased learned; whoever calls those holds the
     // strategy's owner exclusively.
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      ASSIGN_OR_RETURN(int gpus, p.Get<int>("max_gpus"));
      return std::unique_ptr<PlacementStrategy>(new GpuClustering(gpus));
    });

}  // namespace
}  // namespace gpufleet
