// Node scores kept per caller-numbered pod shape, for hosts that place one pod at a time from a
// trace that repeats a few hundred shapes (the openb replay). The host numbers its shapes
// (0..shapes-1); every shape keeps each node's answer (infeasible, or its score) stamped with the
// node's version, so a pod rescores only the nodes that changed since the last pod of its shape.
// Unlike NodeScoreCache (bounded to a few recent shapes, found by comparing pods) it holds every
// shape at once and finds it by number, so a run costs the same with 50 shapes or 400 (GPU-model
// limits multiply shapes).
//
// The rule is the Placer's: the feasible node with the best score, ties to the earliest node.
// Feasibility is the accounting's Filter plus the node constraints, scores are the strategy's
// ScoreNode (ScoreOnNode when it scores from a plan), the winner's devices come from PlanOnNode.
// A pod that limits GPU models never looks at nodes with too few GPUs of an accepted model (a mask
// per (GPU count, models), computed once per node set). A strategy that draws random numbers
// (Deterministic() == false) keeps only feasibility and is asked afresh on every feasible node
// for every pod, in node order.
#ifndef GPUFLEET_PLACEMENT_NUMBERED_SHAPES_H_
#define GPUFLEET_PLACEMENT_NUMBERED_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

class NumberedShapeScores {
 public:
  NumberedShapeScores() = default;
  // A copy starts empty: entries point into their own mask table, and are cheap to rebuild.
  NumberedShapeScores(const NumberedShapeScores&) {}
  NumberedShapeScores& operator=(const NumberedShapeScores&) {
    Clear();
    return *this;
  }
  NumberedShapeScores(NumberedShapeScores&&) = default;
  NumberedShapeScores& operator=(NumberedShapeScores&&) = default;

  // The node for `pod` (of caller-numbered `shape`, >= 0) with its devices in `plan`, or -1 when
  // none fits. Pods given the same number must agree on everything Filter and the strategy read
  // (cpu, memory, devices, models, selector). Everything kept is dropped when the strategy
  // instance, the state's change log (a copy, a removed node) or the node count differs from the
  // last call's.
  int Choose(const ClusterState& state, const Pod& pod, int shape,
             const PlacementStrategy& strategy, Allocation* plan);

  void Clear();

 private:
  struct Entry {
    std::vector<double> score;     // per node; kInfeasible, or kFeasible for random strategies
    std::vector<uint64_t> seen;    // the node version `score` belongs to; 0 = never
    const uint8_t* models = nullptr;  // per node: 0 where too few GPUs have an accepted model
  };
  static constexpr double kInfeasible = -1e300;
  static constexpr double kFeasible = 0.0;

  static bool Fits(const ClusterState& state, const Pod& pod, int node);
  // Per node, whether enough GPUs have a model the pod accepts: fixed for a node, so a pod that
  // limits models never looks at the nodes of other models again (nor pays for their rejection
  // reasons). Shared by every shape with the same GPU count and models.
  const uint8_t* ModelMask(const ClusterState& state, const Pod& pod);

  // What the kept answers belong to.
  uint64_t strategy_id_ = 0, log_id_ = 0;
  int num_nodes_ = -1;
  std::vector<Entry> entries_;  // by shape, grown on demand
  absl::node_hash_map<std::string, std::vector<uint8_t>> model_masks_;  // entries point here
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NUMBERED_SHAPES_H_
