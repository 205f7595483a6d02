// Nodes grouped into equivalence classes: same spec apart from the name (labels, taints,
// capacities, devices, NVLink groups) and the same usage (cpu, memory, pods, every device's used
// core and memory). Predicates and scores that look only at a node's spec and usage give every
// member the same answer, so node choice asks one representative per class (its lowest index,
// which also keeps the full scan's tie rule: the earliest node wins). This is the idea behind the
// equivalence classes of the early Kubernetes scheduler, applied exactly: a class is split the
// moment one member's usage changes. Plugins whose answers depend on more (a node's name, where a
// job's other tasks are) turn it off.
#ifndef GPUFLEET_ENGINE_NODE_CLASSES_H_
#define GPUFLEET_ENGINE_NODE_CLASSES_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gpufleet/accounting/cluster_state.h"

namespace gpufleet::engine {

class NodeClasses {
 public:
  explicit NodeClasses(const ClusterState& state);
  // Re-files one node after its usage changed.
  void Update(int node);
  // Live classes; members are node indices in ascending order.
  const std::vector<int>& live() const { return live_; }
  const std::set<int>& members(int cls) const { return classes_[cls].nodes; }
  int representative(int cls) const { return *classes_[cls].nodes.begin(); }

 private:
  std::vector<int64_t> Key(int node) const;
  void Insert(int node);
  void Remove(int node);

  struct Class {
    std::set<int> nodes;
    int live_pos = -1;
  };
  const ClusterState& state_;
  std::vector<int> spec_id_;   // per node: interned spec without the name
  std::vector<int> class_of_;  // per node
  std::vector<Class> classes_;
  std::vector<int> live_;
  absl::flat_hash_map<std::vector<int64_t>, int> index_;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_NODE_CLASSES_H_
