// One node's answer for one pod: the devices a strategy would give it there (PlanOnNode) and the
// strategy's score of the node (ScoreOnNode). The node must admit the pod first (AdmitNode), and
// its device fit runs once: the domains a choice must come from are what the fit found.
#ifndef GPUFLEET_PLACEMENT_NODE_PLAN_H_
#define GPUFLEET_PLACEMENT_NODE_PLAN_H_

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/placement.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

// The node with the strategy's devices (allocation state kReserved, not applied), or why the
// node does not take the pod (AdmitNode's reason, or the strategy's when it finds no devices).
// Changes nothing in `state`.
Placement PlanOnNode(const ClusterState& state, const Pod& pod, int node,
                     const PlacementStrategy& strategy, Admission admission = Admission::kFull);

// The strategy's score of `node` for `pod`, in [0, 100]; the node's admission is not asked, except
// by a strategy that scores its plan (0 where there is none). Inline: hosts ask it for every node
// of every task (the engine's deviceshare plugin).
inline double ScoreOnNode(const ClusterState& state, const Pod& pod, int node,
                          const PlacementStrategy& strategy) {
  if (!strategy.ScoreNeedsPlan()) return strategy.ScoreNode(state.View(node), pod, {});
  const Placement plan = PlanOnNode(state, pod, node, strategy, Admission::kCapacityOnly);
  return plan.ok() ? strategy.ScoreNode(state.View(node), pod, plan.allocation.devices) : 0.0;
}

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NODE_PLAN_H_
