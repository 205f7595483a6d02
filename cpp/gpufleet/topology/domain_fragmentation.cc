#include "gpufleet/topology/domain_fragmentation.h"

#include <algorithm>

namespace gpufleet::topology {

GangSizes FutureGangSizes(const Topology& t, int l, const std::vector<int>& node_cap,
                          const std::vector<int64_t>& prefix) {
  int64_t largest = 1;
  if (l < 0) {
    largest = std::max<int64_t>(1, prefix.back());
  } else {
    for (int d = 0; d < t.num_domains(l); ++d)
      largest = std::max(largest, prefix[t.end_pos(l, d)] - prefix[t.first_pos(l, d)]);
  }
  GangSizes sizes;
  for (int64_t s = 1; s <= largest; s *= 2) sizes.emplace_back(s, 0.0);
  for (auto& [s, w] : sizes) w = 1.0 / static_cast<double>(sizes.size());
  return sizes;
}

double DomainFragmentation(int64_t free_pods, const GangSizes& sizes) {
  double frag = 0;
  for (const auto& [s, w] : sizes) frag += w * static_cast<double>(free_pods % s);
  return frag;
}

std::vector<double> ScoreDomains(const std::vector<DomainView>& domains, int64_t need,
                                 const GangSizes& sizes) {
  int64_t most = 1;
  for (const DomainView& d : domains) most = std::max(most, d.free_pods);
  std::vector<double> out;
  out.reserve(domains.size());
  for (const DomainView& d : domains) {
    const double growth =
        DomainFragmentation(d.free_pods - need, sizes) - DomainFragmentation(d.free_pods, sizes);
    // Tie-breaks below one pod of fragmentation: the tighter fit, then a touched domain.
    const double leftover = static_cast<double>(d.free_pods - need) / static_cast<double>(most);
    out.push_back(-growth - 0.1 * leftover - (d.untouched && d.free_pods > need ? 0.05 : 0.0));
  }
  return out;
}

}  // namespace gpufleet::topology
