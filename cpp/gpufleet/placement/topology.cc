// topology: for multi-device requests, keep a job's devices close and the rest of the board
// whole. With NVLink partitions the mechanism offers only groups of the requested size; this
// strategy takes the group inside the most-used larger partition (untouched partitions stay
// whole). Without NVLink it prefers the smallest PCIe switch group, then NUMA node, that can hold
// the request. Single-device requests and node scores follow binpack. Ties go to lower minors.
#include <algorithm>
#include <map>
#include <vector>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/node_score.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

// Free (untouched) GPUs in the smallest NVLink group that strictly contains `set`; fewer is
// better. Boards without a containing group count as fully free.
int FreeInParent(const NodeView& v, const std::vector<int>& set) {
  std::vector<int> minors;
  for (int d : set) minors.push_back(v.device(d).minor);
  const std::vector<int>* parent = nullptr;
  for (const auto& g : v.node->nvlink_groups) {
    if (g.size() <= minors.size()) continue;
    bool contains = std::all_of(minors.begin(), minors.end(), [&](int m) {
      return std::find(g.begin(), g.end(), m) != g.end();
    });
    if (contains && (parent == nullptr || g.size() < parent->size())) parent = &g;
  }
  if (parent == nullptr) return v.num_devices();
  int free = 0;
  for (int d = 0; d < v.num_devices(); ++d) {
    if (v.device(d).type != kGpu) continue;
    if (std::find(parent->begin(), parent->end(), v.device(d).minor) != parent->end() &&
        v.untouched(d))
      ++free;
  }
  return free;
}

class Topology : public AllocationScoredStrategy {
 public:
  Topology() : AllocationScoredStrategy(+1) {}

  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    const auto best_fit = BestFitLess(v);
    if (r.count == 1)
      return ChooseByOrder(v, 1, domains, best_fit,
                           [&](const std::vector<int>&, const std::vector<int>&) { return false; },
                           chosen);
    if (r.type == kGpu && !v.node->nvlink_groups.empty()) {
      // Domains are whole NVLink groups of exactly r.count devices.
      return ChooseByOrder(
          v, r.count, domains, best_fit,
          [&](const std::vector<int>& a, const std::vector<int>& b) {
            return FreeInParent(v, a) < FreeInParent(v, b);
          },
          chosen);
    }
    // Re-split every domain by PCIe switch, then NUMA node; the tightest group that holds the
    // request wins, else the whole domain.
    for (int level = 0; level < 3; ++level) {
      std::vector<std::vector<int>> groups;
      for (const auto& domain : domains) {
        if (level == 2) {
          groups.push_back(domain);
          continue;
        }
        std::map<std::string, std::vector<int>> by_key;
        for (int d : domain) {
          const DeviceTopology& t = v.device(d).topology;
          std::string key = level == 0 ? t.pcie_switch
                                       : (t.numa_node < 0 ? "" : std::to_string(t.numa_node));
          if (!key.empty()) by_key[key].push_back(d);
        }
        for (auto& [k, members] : by_key) groups.push_back(std::move(members));
      }
      // The smallest group that can hold the request is the tightest fit; among groups of that
      // size ChooseByOrder takes the lower minors.
      size_t tightest = 0;
      for (const auto& g : groups)
        if (g.size() >= static_cast<size_t>(r.count) && (tightest == 0 || g.size() < tightest))
          tightest = g.size();
      std::erase_if(groups, [&](const std::vector<int>& g) { return g.size() != tightest; });
      bool ok = ChooseByOrder(
          v, r.count, groups, best_fit,
          [](const std::vector<int>&, const std::vector<int>&) { return false; }, chosen);
      if (ok) return true;
    }
    return false;
  }
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "topology",
     .description = "multi-device requests kept in one NVLink group / PCIe switch / NUMA node; "
                    "untouched NVLink partitions kept whole"},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      return std::unique_ptr<PlacementStrategy>(new Topology());
    });

}  // namespace
}  // namespace gpufleet
