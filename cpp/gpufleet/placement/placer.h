// Node choice: which node a pod goes to, and why none when it fits nowhere. The Placer reads the
// accounting through a const ClusterState (summaries, per-device arrays, node versions) and owns
// everything about choosing: feasibility, scoring, the per-shape score cache and the no-fit
// reason; only Place's final reserve (and commit) writes to the state. The simulator's device
// ledger and openb replay, the Kubernetes adapters (through GuardedCluster) and the bindings place
// through it (the replay by numbered pod shapes, ChooseNumbered), and the engine's session
// chooses through ChooseWithTerms (its plugins' predicates and scores as PlacementTerms, nodes
// asked once per equivalence class).
//
// The full scan is two steps. First every node is checked against its compact summaries and, for
// strategies that score by allocation (binpack, spread, topology), scored, in one branch-free
// loop over dense arrays. Then the devices are consulted for the best candidates only, in score
// order (ties to the earlier node), until one really fits. The answer is exactly that of
// filtering and scoring every node (tests/cpp/placer_test.cc checks it against that reference).
#ifndef GPUFLEET_PLACEMENT_PLACER_H_
#define GPUFLEET_PLACEMENT_PLACER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/accounting/fit.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/node_classes.h"
#include "gpufleet/placement/node_score_cache.h"
#include "gpufleet/placement/numbered_shapes.h"
#include "gpufleet/placement/placement_terms.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

struct PlaceResult {
  bool placed = false;
  Allocation allocation;  // valid when placed
  std::string reason;     // why not, e.g. "0/3 nodes are available: 2 Insufficient gpu devices, ..."
};

// Filter, then ask `strategy` for devices; on success fills `plan` (state kReserved, not applied).
FitResult PlanOnNode(const ClusterState& state, const Pod& pod, int node,
                     const PlacementStrategy& strategy, Allocation* plan);
// The strategy's score of `node` for `pod` (0 where a plan is needed and none exists).
double ScoreOnNode(const ClusterState& state, const Pod& pod, int node,
                   const PlacementStrategy& strategy);

class Placer {
 public:
  // The node for `pod` over every node (or `candidates`, ties to the earlier candidate): the
  // feasible node with the best score, ties to the earlier node. Fills `plan` and returns the
  // node, or FailedPrecondition with the reason ("0/N nodes are available: ..."). Changes nothing
  // in `state`.
  absl::StatusOr<int> Choose(const ClusterState& state, const Pod& pod,
                             const PlacementStrategy& strategy, const std::vector<int>* candidates,
                             Allocation* plan);

  // The node for `pod` by a host's terms (the engine's plugins): among the nodes whose totals may
  // hold the pod and that pass `terms.Filter`, the one with the highest `terms.Score`, ties to
  // the earlier node; `strategy` then plans its devices into `plan`. Nodes alike in spec and
  // usage are asked once (NodeClasses) when the terms allow it. When none passes,
  // FailedPrecondition with "0/N nodes are available: ..." (terms' reasons first, then the
  // node's own Filter); when the winner's devices do not serve the request, that reason.
  absl::StatusOr<int> ChooseWithTerms(const ClusterState& state, const Pod& pod,
                                      const PlacementStrategy& strategy,
                                      const PlacementTerms& terms, Allocation* plan);

  // The node for `pod`, one of the caller's numbered pod shapes (0..N-1; pods given one number
  // agree on everything but their names), by the same rule as Choose over every node: each
  // shape keeps every node's answer until that node changes (NumberedShapeScores), for hosts that
  // place a long trace of a few hundred shapes one pod at a time (the openb replay). Fills `plan`
  // and returns the node, or -1 when none fits (without a reason: failures are common there and
  // a reason costs a Filter per node). Changes nothing in `state`.
  int ChooseNumbered(const ClusterState& state, const Pod& pod, int shape,
                     const PlacementStrategy& strategy, Allocation* plan) {
    return numbered_.Choose(state, pod, shape, strategy, plan);
  }

  // Choose, then reserve the plan (and commit it when `commit`).
  PlaceResult Place(ClusterState& state, const Pod& pod, const PlacementStrategy& strategy,
                    bool commit = true, const std::vector<int>* candidates = nullptr);

  // Over all nodes with a deterministic strategy, the scores of nodes unchanged since the last
  // pod of the same shape are reused (exactly the same answer, see NodeScoreCache). Off: every
  // call scans afresh.
  void set_score_cache(bool enabled) {
    score_cache_enabled_ = enabled;
    if (!enabled) score_cache_.Clear();
  }

 private:
  int ChooseScanning(const ClusterState& state, const Pod& pod, const PlacementStrategy& strategy,
                     Allocation* plan, bool* have_plan);
  int ChooseCached(const ClusterState& state, const Pod& pod, const PlacementStrategy& strategy);
  int ChooseAmong(const ClusterState& state, const Pod& pod, const PlacementStrategy& strategy,
                  const std::vector<int>* candidates, Allocation* plan, bool* have_plan);

  // Node classes of the last state ChooseWithTerms served, kept current through its change log.
  const NodeClasses& ClassesFor(const ClusterState& state);

  // Built on first use; a copied Placer starts without (the classes name their state).
  struct ClassesSlot {
    std::unique_ptr<NodeClasses> classes;
    ClassesSlot() = default;
    ClassesSlot(const ClassesSlot&) {}
    ClassesSlot& operator=(const ClassesSlot&) {
      classes.reset();
      return *this;
    }
    ClassesSlot(ClassesSlot&&) = default;
    ClassesSlot& operator=(ClassesSlot&&) = default;
  };

  ClassesSlot classes_;
  NodeScoreCache score_cache_;
  NumberedShapeScores numbered_;
  bool score_cache_enabled_ = true;
  std::vector<double> scores_, memory_extra_;  // scratch, per node
  std::vector<uint8_t> allowed_;
  std::vector<int> changed_;
};

// Why no node fits, as kube-scheduler words it: "0/N nodes are available: 3 Insufficient cpu".
std::string NoFitReason(const ClusterState& state, const Pod& pod,
                        const std::vector<int>* candidates);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_PLACER_H_
