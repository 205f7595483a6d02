// Fragmentation of topology domains, the FGD measure (placement/strategies/fragmentation.h)
// lifted from GPUs on a node to pods in a domain. For a future gang of s pods, a domain with F
// free pods can take floor(F / s) such gangs, and the F mod s pods left over (all F when F < s)
// are fragmented for it: no gang of that size can use them inside the domain. A domain's
// fragmentation is the expectation of that amount over a distribution of future gang sizes.
// Placing n pods in a domain changes it by Frag(F - n) - Frag(F); the fragmentation rule
// (Fit::kFragmentation) prefers the domain where that change is smallest, so a gang that
// completes a domain (F = n, nothing left to strand) or fits one tightly wins, and an untouched
// rack or NVLink domain stays whole for a later large gang unless nothing else fits.
#ifndef GPUFLEET_TOPOLOGY_DOMAIN_FRAGMENTATION_H_
#define GPUFLEET_TOPOLOGY_DOMAIN_FRAGMENTATION_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "gpufleet/topology/topology.h"

namespace gpufleet::topology {

struct DomainView {
  int64_t free_pods = 0;  // pods of the gang's shape the domain takes
  int nodes = 0;
  bool untouched = false;  // no pod runs on any of its nodes
};

// Future gang sizes (pods) with weights summing to 1.
using GangSizes = std::vector<std::pair<int64_t, double>>;

// The default distribution at level l: 1, 2, 4, ... up to the largest domain capacity there,
// equally likely (the shape of a training fleet's job sizes, powers of two).
GangSizes FutureGangSizes(const Topology& t, int l, const std::vector<int>& node_cap,
                          const std::vector<int64_t>& prefix);

// Expected pods fragmented in a domain with `free_pods` free, over `sizes`.
double DomainFragmentation(int64_t free_pods, const GangSizes& sizes);

// One score per domain for placing `need` pods (higher is better): minus the growth of its
// fragmentation, then the tighter fit, then touched before untouched.
std::vector<double> ScoreDomains(const std::vector<DomainView>& domains, int64_t need,
                                 const GangSizes& sizes);

}  // namespace gpufleet::topology

#endif  // GPUFLEET_TOPOLOGY_DOMAIN_FRAGMENTATION_H_
