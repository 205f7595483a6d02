// fgd: Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023, Section 5).
// For each feasible node, and on it each GPU a shared pod could take, FGD computes how much the
// placement would change the node's expected fragmentation against the workload distribution
// (fragmentation.h); it takes the node and GPU where fragmentation grows least (the steepest
// descent of the cluster's fragmentation). Score = 100 * sigmoid(decrease in GPUs), as in the
// paper's simulator, truncated to an integer as the simulator does (`integer_scores`, default
// true: with ties going to the first node by name, this reproduces the published figures;
// false keeps the exact value).
//
// The workload comes from the registry parameter "workload" (see GpuWorkload::FromJson); without
// one, FGD measures fragmentation against a single whole-GPU task (free share on partly used GPUs
// counts as fragment). MakeFgd builds one natively from a GpuWorkload (the openb replay does so
// with the trace's own pod mix). Answers are memoised by node state (free CPU, free share per GPU,
// and each GPU's model when the pod or the workload limits models) and task shape, so identical
// nodes cost one evaluation whether or not pods constrain the GPU model. Not ConcurrentSafe(): ChooseDevices
// reuses the task of the pod last scored and the memo grows with every score, so an instance
// belongs to one cluster (StrategyCache) and its owner serialises every use.
#ifndef GPUFLEET_PLACEMENT_STRATEGIES_FGD_H_
#define GPUFLEET_PLACEMENT_STRATEGIES_FGD_H_

#include <memory>

#include "gpufleet/placement/strategies/fragmentation.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

std::unique_ptr<PlacementStrategy> MakeFgd(GpuWorkload workload, bool integer_scores = true);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_STRATEGIES_FGD_H_
