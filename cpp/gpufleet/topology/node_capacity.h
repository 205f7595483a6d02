// How many pods of one shape a node can still take, exactly, by the same rules as a plan on the
// node (PlanOnNode): labels and taints, pod count, cpu, memory, and the devices with NVLink
// partitions, PCIe/NUMA scope and RDMA virtual functions. Two routes give the same count:
//   - from the node's summaries (free pods, cpu, memory, untouched GPUs) when that is exact: no
//     devices, or whole GPUs of any model without a scope on a node whose GPUs are not split
//     into NVLink partitions (a single GPU is always fine);
//   - otherwise by planning and reserving pod after pod on a copy of that one node.
// Pods placed by earlier groups of the same gang are counted through Add, so a leader and its
// workers competing for one node see each other. Not thread-safe: one per placement call.
#ifndef GPUFLEET_TOPOLOGY_NODE_CAPACITY_H_
#define GPUFLEET_TOPOLOGY_NODE_CAPACITY_H_

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet::topology {

class NodeCapacity {
 public:
  NodeCapacity(const ClusterState& state, const PlacementStrategy& strategy)
      : state_(state), strategy_(strategy) {}

  // Pods of `pod`'s shape node `node` takes, given the pods added so far. A count planned pod
  // after pod stops at `limit` (a node that holds the whole group counts as holding it); one read
  // from the summaries is the node's full count.
  int Count(const Pod& pod, int node, int limit);
  // Count for every node of `nodes` into `out` (same order); the shape is looked at once.
  void CountAll(const Pod& pod, const std::vector<int>& nodes, int limit, int* out);
  // Whether Count reads only the summaries for this shape on this node.
  bool FromSummaries(const Pod& pod, int node) const;
  // `count` pods of `pod`'s shape now hold capacity on `node` (placed by an earlier group).
  void Add(const Pod& pod, int node, int count);

 private:
  struct Added {
    int64_t cpu = 0, memory = 0, pods = 0, whole_gpus = 0;
    bool by_plan = false;  // a pod the summaries cannot count was added: plan from now on
    std::vector<std::pair<const Pod*, int>> pods_by_shape;  // replayed into a probe copy
  };
  // A copy of one node with its allocations and the pods added, for planning pod after pod.
  ClusterState& Probe(int node);
  int CountBySummaries(const Pod& pod, int node) const;
  // Whether the shape alone allows counting from the summaries: 0 never, 1 always, 2 on nodes
  // without NVLink partitions.
  int SummaryRoute(const Pod& pod) const;

  const ClusterState& state_;
  const PlacementStrategy& strategy_;
  absl::flat_hash_map<int, Added> added_;
  absl::flat_hash_map<int, std::unique_ptr<ClusterState>> probes_;
  int next_probe_pod_ = 0;
  bool allocations_indexed_ = false;
  absl::flat_hash_map<std::string, std::vector<const Allocation*>> allocations_by_node_;
};

}  // namespace gpufleet::topology

#endif  // GPUFLEET_TOPOLOGY_NODE_CAPACITY_H_
