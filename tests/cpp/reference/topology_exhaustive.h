// The exhaustive twin of the gang placer for small instances: every way to split a one-group
// gang's pods over the topology's nodes (each node at most its capacity), kept when it meets the
// request (all pods inside one domain of the required level, every slice-level domain holding a
// whole number of slices), scored by Spread, the best kept.
#ifndef GPUFLEET_TESTS_CPP_REFERENCE_TOPOLOGY_EXHAUSTIVE_H_
#define GPUFLEET_TESTS_CPP_REFERENCE_TOPOLOGY_EXHAUSTIVE_H_

#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "gpufleet/topology/gang_request.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::topology::reference {

// How far a split spreads: the domains it touches on every level plus the nodes it touches
// (fewer is better; a gang in one rack on two nodes of an existing block costs 1 + 1 + 2).
inline int Spread(const Topology& t, const std::vector<int>& pods_per_node) {
  int cost = 0;
  for (int l = 0; l < t.num_levels(); ++l) {
    std::set<int> touched;
    for (int n = 0; n < static_cast<int>(pods_per_node.size()); ++n)
      if (pods_per_node[n] > 0) touched.insert(t.DomainOf(l, n));
    cost += static_cast<int>(touched.size());
  }
  for (int c : pods_per_node) cost += c > 0;
  return cost;
}

// Whether a split (pods per node index) is a valid placement of `count` pods under `c`.
inline bool Valid(const Topology& t, const std::vector<int>& pods_per_node,
                  const std::vector<int>& capacity, const ResolvedConstraint& c, int count) {
  int total = 0;
  std::set<int> required_domains;
  std::vector<int> per_slice_domain(c.slice_level >= 0 ? t.num_domains(c.slice_level) : 0, 0);
  for (int n = 0; n < static_cast<int>(pods_per_node.size()); ++n) {
    const int k = pods_per_node[n];
    if (k == 0) continue;
    if (k < 0 || k > capacity[n] || t.PositionOf(n) < 0) return false;
    total += k;
    if (c.required >= 0) required_domains.insert(t.DomainOf(c.required, n));
    if (c.slice_level >= 0) per_slice_domain[t.DomainOf(c.slice_level, n)] += k;
  }
  if (total != count || required_domains.size() > 1) return false;
  for (int k : per_slice_domain)
    if (k % c.slice_size != 0) return false;
  return true;
}

struct ExhaustiveBest {
  bool feasible = false;
  int spread = std::numeric_limits<int>::max();
  std::vector<int> pods_per_node;
  int64_t splits = 0;  // valid splits seen
};

inline ExhaustiveBest Exhaustive(const Topology& t, const std::vector<int>& capacity,
                                 const ResolvedConstraint& c, int count) {
  ExhaustiveBest best;
  const std::vector<int>& order = t.order();
  std::vector<int> suffix(order.size() + 1, 0);  // capacity left from a position on
  for (int p = static_cast<int>(order.size()) - 1; p >= 0; --p)
    suffix[p] = suffix[p + 1] + capacity[order[p]];
  std::vector<int> split(capacity.size(), 0);
  auto visit = [&](auto&& self, int p, int left) -> void {
    if (left == 0) {
      if (!Valid(t, split, capacity, c, count)) return;
      ++best.splits;
      const int s = Spread(t, split);
      if (!best.feasible || s < best.spread) {
        best.feasible = true;
        best.spread = s;
        best.pods_per_node = split;
      }
      return;
    }
    if (p == static_cast<int>(order.size()) || suffix[p] < left) return;
    const int node = order[p];
    for (int k = std::min(left, capacity[node]); k >= 0; --k) {
      split[node] = k;
      self(self, p + 1, left - k);
    }
    split[node] = 0;
  };
  visit(visit, 0, count);
  return best;
}

}  // namespace gpufleet::topology::reference

#endif  // GPUFLEET_TESTS_CPP_REFERENCE_TOPOLOGY_EXHAUSTIVE_H_
