// The two node constraints a pod states about where it may run, each on its own so a host can
// switch one off (Volcano's predicates plugin: predicate.NodeAffinityEnable,
// predicate.TaintTolerationEnable). FitsNodeConstraints (cluster_state.h) checks both.
#ifndef GPUFLEET_ACCOUNTING_NODE_CONSTRAINTS_H_
#define GPUFLEET_ACCOUNTING_NODE_CONSTRAINTS_H_

#include "gpufleet/accounting/fit.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

// Every nodeSelector entry equals the node's label.
FitResult MatchesNodeSelector(const Pod& pod, const Node& node);

// Every NoSchedule and NoExecute taint is tolerated (PreferNoSchedule never blocks).
FitResult ToleratesTaints(const Pod& pod, const Node& node);

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_NODE_CONSTRAINTS_H_
