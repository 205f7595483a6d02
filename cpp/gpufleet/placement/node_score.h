// Node-level utilisation after a hypothetical placement, the quantity that Kubernetes'
// MostAllocated / LeastAllocated (and Koordinator's device variants) score.
#ifndef GPUFLEET_PLACEMENT_NODE_SCORE_H_
#define GPUFLEET_PLACEMENT_NODE_SCORE_H_

#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

// In [0, 1]. GPU pods are scored on GPU core and memory; other pods on cpu and memory.
double AllocatedFractionAfter(const NodeView& node, const Pod& pod);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NODE_SCORE_H_
