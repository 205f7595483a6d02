#ifndef GPUFLEET_PLACEMENT_STRATEGY_INL_H_
#define GPUFLEET_PLACEMENT_STRATEGY_INL_H_

#include <algorithm>
#include <vector>

namespace gpufleet {

// True when `a` names lower minors than `b` (compared in ascending order): the tie-break between
// equally good domains, so the answer never depends on the order domains were listed in.
inline bool LowerMinors(const NodeView& node, const std::vector<int>& a,
                        const std::vector<int>& b) {
  std::vector<int> ma, mb;
  for (int d : a) ma.push_back(node.device(d).minor);
  for (int d : b) mb.push_back(node.device(d).minor);
  std::sort(ma.begin(), ma.end());
  std::sort(mb.begin(), mb.end());
  return ma < mb;
}

template <typename DeviceLess, typename SetLess>
bool ChooseByOrder(const NodeView& node, int count, const std::vector<std::vector<int>>& domains,
                   DeviceLess better, SetLess domain_better, std::vector<int>* chosen) {
  bool found = false;
  std::vector<int> pick;
  for (const auto& domain : domains) {
    if (static_cast<int>(domain.size()) < count) continue;
    pick.assign(domain.begin(), domain.end());
    // A total order (minors are unique on a node), so only the first `count` need sorting.
    std::partial_sort(pick.begin(), pick.begin() + count, pick.end(), [&](int a, int b) {
      if (better(a, b)) return true;
      if (better(b, a)) return false;
      return node.device(a).minor < node.device(b).minor;
    });
    pick.resize(count);
    std::sort(pick.begin(), pick.end());
    if (!found || domain_better(pick, *chosen) ||
        (!domain_better(*chosen, pick) && LowerMinors(node, pick, *chosen))) {
      chosen->swap(pick);  // `pick` is refilled from the next domain
      found = true;
    }
  }
  return found;
}

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_STRATEGY_INL_H_
