// Node classes for tasks with claims. A task's claims fit a node by what the accounting shows
// there and by what the DRA ledger keeps for it (its profile, which accounting devices its DRA
// devices are, what claims hold there), so nodes alike in both give every task the same answer
// and node choice asks one per class (placement/node_classes.h) instead of every node. The
// ledger's part of a node changes only when a statement holds or gives back claims there, and
// the statement reserves or releases the task's allocation on that node at the same time, so the
// classes see the node change in the state's change log.
#ifndef GPUFLEET_ENGINE_DRA_NODE_CLASSES_H_
#define GPUFLEET_ENGINE_DRA_NODE_CLASSES_H_

#include <cstdint>
#include <vector>

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/engine/dra_ledger.h"
#include "gpufleet/placement/node_classes.h"

namespace gpufleet::engine {

class DraNodeClassKey : public NodeClassKey {
 public:
  DraNodeClassKey(const ClusterState& state, const DraLedger& dra) : state_(state), dra_(dra) {}
  void Append(int node, std::vector<int64_t>& key) const override {
    dra_.AppendClassKey(state_.node(node).name, key);
  }

 private:
  const ClusterState& state_;
  const DraLedger& dra_;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_DRA_NODE_CLASSES_H_
