// Gang placement across topology levels: which domain a gang goes to and how many of its pods
// each node takes. The per-node device choice is not made here: a host plans each pod on its
// node with the Placer's per-node plan (PlanOnNode), so NVLink partitions, PCIe/NUMA packing and
// RDMA virtual functions apply unchanged, and the counts here are exactly what those plans admit
// (NodeCapacity).
//
// The search, per gang (Kueue's algorithm, restated):
//   1. Every node's capacity in pods of each group's shape; sums per domain from prefix sums over
//      the topology's node order (every domain is a contiguous range). With slices, a domain of
//      the slice level holds floor(pods / slice size) slices, and wider domains the sum of those.
//   2. The gang's domain: from its preferred level up to its required level (or the top), the
//      first level where some domain takes every group; among those, the fit rule picks (best
//      fit: the least capacity that still fits). Without a requirement and with no domain
//      fitting, the gang spreads over the whole topology. A required level no domain satisfies
//      leaves the gang pending with a reason naming the level.
//   3. Each group inside the gang's domain the same way, under its own constraint, groups in
//      order (a leader before its workers), each seeing the capacity the earlier ones took.
//   4. Down the levels to the nodes: children largest first, the last child the smallest that
//      takes the remainder (best fit), least free first (least-free-capacity), or the fewest
//      children with an even split (balanced).
// The answer depends only on the state, the topology and the request. A GangPlacer keeps
// scratch buffers, so a host uses one per thread or holds its own lock around it.
#ifndef GPUFLEET_TOPOLOGY_GANG_PLACER_H_
#define GPUFLEET_TOPOLOGY_GANG_PLACER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/topology/gang_request.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::topology {

struct GroupPlacement {
  std::string name;
  int level = -1, domain = -1;            // the domain its pods stay in; -1: the whole topology
  std::vector<std::pair<int, int>> nodes;  // (node index, pods), in placement order
  // One node index per pod, in the order of `nodes`.
  std::vector<int> PodNodes() const;
  int pods() const;
};

struct GangPlacement {
  std::string reason;            // empty when placed
  int level = -1, domain = -1;   // the gang's domain; -1: the whole topology
  std::vector<GroupPlacement> groups;
  bool ok() const { return reason.empty(); }
};

// Per-node pod capacities of one group's shape, the input every fit rule reads. Exposed so that
// tests and the exhaustive search can start from the same numbers.
std::vector<int> GroupCapacities(const ClusterState& state, const Topology& topology,
                                 const GroupRequest& group, const PlacementStrategy& strategy);

class GangPlacer {
 public:
  // Where the gang goes, or why nowhere. Errors: the request names unknown levels or is
  // malformed (gang_request.h). Changes nothing.
  absl::StatusOr<GangPlacement> Choose(const ClusterState& state, const Topology& topology,
                                       const GangRequest& request,
                                       const PlacementStrategy& strategy);
};

}  // namespace gpufleet::topology

#endif  // GPUFLEET_TOPOLOGY_GANG_PLACER_H_
