// topology: device-topology packing in the manner of Koordinator's DeviceShare plugin, so that the
// domains a later large job needs (a whole PCIe switch, NUMA node or NVLink group) stay whole.
//  - A request takes the smallest scope that holds it: one PCIe switch, else one NUMA node, else
//    the node. Among scopes of that size it takes the one whose switch / NUMA node already carries
//    work (pack), so untouched domains stay whole.
//  - On boards with NVLink partitions (the mechanism offers only partitions of the requested size)
//    it takes the partition that leaves the most untouched partitions whole, larger ones first:
//    a pair inside an already broken quad before a pair that would break a whole quad.
//  - A shared (fractional) request takes the best-fitting device first (an already shared card
//    before an untouched one, as binpack does); packing only breaks ties.
//  - Ties go to the lower minors. Node scores follow binpack (MostAllocated), as Koordinator's
//    node score does; with `domain_weight` > 0 a node also scores by the share of its PCIe
//    switches, NUMA nodes and NVLink partitions the placement leaves whole (that needs a device
//    plan on every feasible node, so it costs the summary-only fast scan).
// A required scope (pod.scope) is applied by the mechanism before this strategy is asked: the
// domains it receives already lie in one PCIe switch or NUMA node.
#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/node_score.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

// Scope levels, innermost first. The node itself is the outermost scope.
enum Level { kPcieSwitch = 0, kNumaNode = 1, kWholeNode = 2 };

// A device's key at a level; "" when unknown (unknown never forms a scope smaller than the node).
std::string ScopeKey(const Device& d, int level) {
  if (level == kPcieSwitch) return d.topology.pcie_switch;
  if (level == kNumaNode) return d.topology.numa_node < 0 ? "" : std::to_string(d.topology.numa_node);
  return "node";
}

// Which scopes of the node already carry work on a device of the requested type.
class ScopeUse {
 public:
  ScopeUse(const NodeView& v, const std::string& type) : view_(v) {
    for (int d = 0; d < v.num_devices(); ++d) {
      if (v.device(d).type != type || v.untouched(d)) continue;
      for (int level = 0; level <= kWholeNode; ++level) {
        std::string key = ScopeKey(v.device(d), level);
        if (!key.empty()) used_[level].insert(std::move(key));
      }
    }
  }

  // How many of the scopes that hold all of `set` (its switch, its NUMA node, the node) already
  // carry work: more is better packing.
  int UsedScopes(const std::vector<int>& set) const {
    int used = 0;
    for (int level = 0; level <= kWholeNode; ++level) {
      const std::string key = ScopeKey(view_.device(set.front()), level);
      if (key.empty()) continue;
      bool shared = std::all_of(set.begin(), set.end(), [&](int d) {
        return ScopeKey(view_.device(d), level) == key;
      });
      if (shared && used_[level].contains(key)) ++used;
    }
    return used;
  }

 private:
  const NodeView& view_;
  std::array<absl::flat_hash_set<std::string>, kWholeNode + 1> used_;
};

// NVLink partitions still untouched once `set` is taken, weighted by size: partitions of the k-th
// smallest size weigh 100^k (pairs 1, quads 100, all eight 10,000 on a Hopper board, the weights
// of Koordinator's partition bin-packing), so keeping a larger partition whole comes first.
// Partitions smaller than the request do not count. 0 on boards without NVLink partitions.
class NvlinkKeep {
 public:
  explicit NvlinkKeep(const NodeView& v) : view_(v) {
    for (int d = 0; d < v.num_devices(); ++d)
      if (v.device(d).type == kGpu) by_minor_[v.device(d).minor] = d;
    std::set<size_t> sizes;
    for (const auto& g : v.node->nvlink_groups) sizes.insert(g.size());
    double w = 1;
    for (size_t s : sizes) {
      weight_[s] = w;
      w *= 100;
    }
  }

  double KeptAfter(const std::vector<int>& set, int request_count) const {
    double kept = 0;
    for (const auto& g : view_.node->nvlink_groups) {
      if (static_cast<int>(g.size()) < request_count) continue;
      bool whole = std::all_of(g.begin(), g.end(), [&](int minor) {
        auto it = by_minor_.find(minor);
        return it != by_minor_.end() && view_.untouched(it->second) &&
               std::find(set.begin(), set.end(), it->second) == set.end();
      });
      if (whole) kept += weight_.at(g.size());
    }
    return kept;
  }

 private:
  const NodeView& view_;
  absl::flat_hash_map<int, int> by_minor_;
  absl::flat_hash_map<size_t, double> weight_;
};

// `domains` split into groups of devices that share a key at `level` (the domains themselves at
// the node level), keeping the groups that can hold `count` devices.
std::vector<std::vector<int>> GroupsAt(const NodeView& v, const std::vector<std::vector<int>>& domains,
                                       int level, int count) {
  std::vector<std::vector<int>> groups;
  for (const auto& domain : domains) {
    if (level == kWholeNode) {
      if (static_cast<int>(domain.size()) >= count) groups.push_back(domain);
      continue;
    }
    std::vector<std::string> keys;
    std::vector<std::vector<int>> members;
    for (int d : domain) {
      std::string key = ScopeKey(v.device(d), level);
      if (key.empty()) continue;
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        keys.push_back(std::move(key));
        members.push_back({d});
      } else {
        members[it - keys.begin()].push_back(d);
      }
    }
    for (auto& m : members)
      if (static_cast<int>(m.size()) >= count) groups.push_back(std::move(m));
  }
  return groups;
}

// The share of the node's GPU domains (PCIe switches, NUMA nodes, NVLink partitions) that `plan`
// does not break, in [0, 1]: a domain is broken when it was untouched and the plan uses one of its
// GPUs. 1 on nodes without topology.
double ShareOfDomainsKept(const NodeView& v, absl::Span<const DeviceGrant> plan) {
  absl::flat_hash_map<int, int> by_minor;
  for (int d = 0; d < v.num_devices(); ++d)
    if (v.device(d).type == kGpu) by_minor[v.device(d).minor] = d;
  std::vector<std::vector<int>> domains;
  for (int level : {kPcieSwitch, kNumaNode}) {
    std::vector<std::vector<int>> all;
    all.emplace_back();
    for (const auto& [minor, d] : by_minor) all.back().push_back(d);
    for (auto& g : GroupsAt(v, all, level, 1)) domains.push_back(std::move(g));
  }
  for (const auto& g : v.node->nvlink_groups) {
    std::vector<int> members;
    for (int minor : g)
      if (auto it = by_minor.find(minor); it != by_minor.end()) members.push_back(it->second);
    if (!members.empty()) domains.push_back(std::move(members));
  }
  if (domains.empty()) return 1.0;
  absl::flat_hash_set<int> planned;
  for (const DeviceGrant& g : plan)
    if (g.type == kGpu)
      if (auto it = by_minor.find(g.minor); it != by_minor.end()) planned.insert(it->second);
  int broken = 0;
  for (const auto& domain : domains) {
    bool untouched = std::all_of(domain.begin(), domain.end(), [&](int d) { return v.untouched(d); });
    bool hit = std::any_of(domain.begin(), domain.end(), [&](int d) { return planned.contains(d); });
    if (untouched && hit) ++broken;
  }
  return 1.0 - static_cast<double>(broken) / static_cast<double>(domains.size());
}

class Topology : public PlacementStrategy {
 public:
  explicit Topology(double domain_weight) : domain_weight_(domain_weight) {}

  double ScoreNode(const NodeView& node, const Pod& pod,
                   absl::Span<const DeviceGrant> plan) const override {
    const double allocated = MostAllocatedScore(AllocatedFractionAfter(node, pod));
    if (domain_weight_ == 0) return allocated;
    return (1 - domain_weight_) * allocated + domain_weight_ * 100.0 * ShareOfDomainsKept(node, plan);
  }
  // Without the domain term the score is binpack's, so the Placer's summary scan computes it.
  int AllocationScoreSign() const override { return domain_weight_ == 0 ? +1 : 0; }
  bool ScoreNeedsPlan() const override { return domain_weight_ > 0; }

  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    const auto best_fit = BestFitLess(v);
    const ScopeUse use(v, r.type);
    const bool nvlink = r.type == kGpu && !v.node->nvlink_groups.empty();
    const NvlinkKeep keep(v);
    // Better packing first: NVLink partitions kept whole, then scopes that already carry work.
    auto packs_better = [&](const std::vector<int>& a, const std::vector<int>& b) {
      if (nvlink) {
        double ka = keep.KeptAfter(a, r.count), kb = keep.KeptAfter(b, r.count);
        if (ka != kb) return ka > kb;
      }
      return use.UsedScopes(a) > use.UsedScopes(b);
    };

    if (r.count == 1) {
      // One device: the fit of the card (for a shared request), then packing, then the minor.
      auto device_better = [&](int a, int b) {
        if (!r.whole()) {
          if (best_fit(a, b)) return true;
          if (best_fit(b, a)) return false;
        }
        return packs_better({a}, {b});
      };
      return ChooseByOrder(v, 1, domains, device_better,
                           [](const std::vector<int>&, const std::vector<int>&) { return false; },
                           chosen);
    }
    if (nvlink) {
      // The mechanism offers whole free partitions of exactly r.count GPUs.
      return ChooseByOrder(v, r.count, domains, best_fit, packs_better, chosen);
    }
    // The smallest scope that holds the request, then the best-packed scope of that size.
    for (int level = kPcieSwitch; level <= kWholeNode; ++level) {
      std::vector<std::vector<int>> groups = GroupsAt(v, domains, level, r.count);
      if (groups.empty()) continue;
      return ChooseByOrder(v, r.count, groups, best_fit, packs_better, chosen);
    }
    return false;
  }

 private:
  double domain_weight_;
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "topology",
     .description = "devices packed into the smallest and already used PCIe switch / NUMA node / "
                    "NVLink partition, so untouched domains stay whole for large jobs",
     .params = {{.name = "domain_weight", .type = ParamType::kNumber, .default_value = 0.0,
                 .help = "share of the node score given to the domains a placement keeps whole "
                         "(0: MostAllocated alone, as Koordinator)",
                 .range = {.at_least = 0, .at_most = 1}}},
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      ASSIGN_OR_RETURN(double w, p.Get<double>("domain_weight"));
      return std::unique_ptr<PlacementStrategy>(new Topology(w));
    });

}  // namespace
}  // namespace gpufleet
