// Nodes grouped into equivalence classes: same spec apart from the name (labels, taints,
// capacities, devices, NVLink groups) and the same usage (cpu, memory, pods, every device's used
// core and memory). Predicates and scores that look only at a node's spec and usage give every
// member the same answer, so node choice asks one representative per class (its lowest index,
// which also keeps the full scan's tie rule: the earliest node wins). This is the idea behind the
// equivalence classes of the early Kubernetes scheduler, applied exactly: a class is split the
// moment one member's usage changes. The classes follow the state through its change log
// (Sync re-files the nodes changed since the last call). Terms whose answers depend on more (a
// node's name, where a job's other tasks are) say so (PlacementTerms::UsesNodeClasses), and the
// Placer then asks every node. Terms that look at more per node that a host keeps beside the
// state (the engine's claims) add it to the key (NodeClassKey).
#ifndef GPUFLEET_PLACEMENT_NODE_CLASSES_H_
#define GPUFLEET_PLACEMENT_NODE_CLASSES_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gpufleet/accounting/cluster_state.h"

namespace gpufleet {

// More of a node that its answers depend on, kept by a host beside the state: nodes are alike
// only when this is equal too.
class NodeClassKey {
 public:
  virtual ~NodeClassKey() = default;
  // Appends `node`'s part of its class key. The part may change only together with the node's
  // usage in the state, since the classes re-file a node when the state says it changed.
  virtual void Append(int node, std::vector<int64_t>& key) const = 0;
};

class NodeClasses {
 public:
  explicit NodeClasses(const ClusterState& state, const NodeClassKey* more = nullptr);
  // What the key holds beyond spec and usage (null: nothing).
  const NodeClassKey* more() const { return more_; }
  // True when these classes were built from `state` (the same object and change log).
  bool Follows(const ClusterState& state) const {
    return &state == &state_ && state.changes().id() == log_id_;
  }
  // Re-files the nodes changed since the last call (those the state's change log names, or every
  // node whose version moved when the log no longer reaches back). False when nodes were added
  // or removed since: build anew from the state then.
  bool Sync();
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
  const NodeClassKey* more_;
  uint64_t log_id_ = 0, log_position_ = 0;  // how far Sync has read the state's change log
  std::vector<uint64_t> seen_;  // per node: the version it was filed at
  std::vector<int> spec_id_;   // per node: interned spec without the name
  std::vector<int> class_of_;  // per node
  std::vector<Class> classes_;
  std::vector<int> live_;
  absl::flat_hash_map<std::vector<int64_t>, int> index_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NODE_CLASSES_H_
