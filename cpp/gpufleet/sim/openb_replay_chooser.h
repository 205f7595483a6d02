// Node choice for the openb replay: the Placer's rule (the feasible node with the best score,
// ties to the earliest node; placement/placer.h), with every pod shape's per-node answers kept
// until the node changes. The replay places one pod at a time and a trace repeats a few hundred
// shapes, so a pod usually rescores only the handful of nodes that changed since the last pod of
// its shape: a run costs the same whether the trace has 50 shapes or 400 (GPU-model constraints
// multiply shapes), unlike a cache bounded to a few recent shapes.
//
// Feasibility is the accounting's Filter plus the node constraints, scores are the strategy's own
// ScoreNode (ScoreOnNode), and the winner's devices come from PlanOnNode: the same definitions
// every host uses. Nodes are assumed to keep their devices (the replay adds none and removes
// none after the first pod). A strategy that draws random numbers (Deterministic() == false) keeps only
// feasibility cached and is asked for a fresh score on every feasible node for every pod.
#ifndef GPUFLEET_SIM_OPENB_REPLAY_CHOOSER_H_
#define GPUFLEET_SIM_OPENB_REPLAY_CHOOSER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

class ShapeChooser {
 public:
  // `shapes`: how many distinct pod shapes the caller numbers (0..shapes-1). Pods given the same
  // number must agree on everything Filter and the strategy read (cpu, memory, devices, models).
  ShapeChooser(const ClusterState& state, const PlacementStrategy& strategy, int shapes);

  // The node for `pod` (of shape `shape`) with its devices in `plan`, or -1 when none fits.
  int Choose(const Pod& pod, int shape, Allocation* plan);

 private:
  struct Entry {
    std::vector<double> score;     // per node; kInfeasible, or kFeasible for random strategies
    std::vector<uint64_t> seen;    // the node version `score` belongs to; 0 = never
    const uint8_t* models = nullptr;  // per node: 0 where too few GPUs have an accepted model
  };
  static constexpr double kInfeasible = -1e300;
  static constexpr double kFeasible = 0.0;

  bool Fits(const Pod& pod, int node) const;
  // Per node, whether enough GPUs have a model the pod accepts: fixed for a node, so a pod that
  // limits models never looks at the nodes of other models again (nor pays for their rejection
  // reasons). Shared by every shape with the same GPU count and models.
  const uint8_t* ModelMask(const Pod& pod);

  const ClusterState& state_;
  const PlacementStrategy& strategy_;
  const bool cache_scores_;
  std::vector<Entry> entries_;  // by shape, sized on first use
  absl::node_hash_map<std::string, std::vector<uint8_t>> model_masks_;  // entries point here
};

}  // namespace gpufleet

#endif  // GPUFLEET_SIM_OPENB_REPLAY_CHOOSER_H_
