#ifndef GPUFLEET_PLACEMENT_STRATEGY_INL_H_
#define GPUFLEET_PLACEMENT_STRATEGY_INL_H_

#include <algorithm>

namespace gpufleet {

template <typename DeviceLess, typename SetLess>
bool ChooseByOrder(const NodeView& node, int count, const std::vector<std::vector<int>>& domains,
                   DeviceLess better, SetLess domain_better, std::vector<int>* chosen) {
  bool found = false;
  std::vector<int> pick;
  for (const auto& domain : domains) {
    if (static_cast<int>(domain.size()) < count) continue;
    pick.assign(domain.begin(), domain.end());
    std::stable_sort(pick.begin(), pick.end(), [&](int a, int b) {
      if (better(a, b)) return true;
      if (better(b, a)) return false;
      return node.device(a).minor < node.device(b).minor;
    });
    pick.resize(count);
    std::sort(pick.begin(), pick.end());
    if (!found || domain_better(pick, *chosen)) {
      *chosen = pick;
      found = true;
    }
  }
  return found;
}

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_STRATEGY_INL_H_
