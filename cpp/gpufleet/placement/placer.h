// Node choice: which node a pod goes to, and why none when it fits nowhere. Every host asks the
// same question, a PlacementQuery (placement.h), and gets the same answer, a Placement: the
// engine's session (with its plugins' terms and its miss cache), the simulator's device ledger,
// the openb replay (numbered pod shapes, an observer), GuardedCluster (Python's Cluster) and the
// bindings. The Placer reads the accounting through a const ClusterState and owns everything
// about choosing (admission, scores, the score table, the no-fit reason); only Place's reserve
// and commit write to the state.
//
// Without terms, the answer is the node that admits the pod (AdmitNode) with the best strategy
// score, ties to the earlier node (or candidate). It is found in two steps: every node's score
// from its summaries (SummaryScan) or, for strategies that need more, the strategy's own;
// then, for summary scores, the devices of the best candidates only, in score order, until one
// really fits. The score table (ScoreTable) keeps each shape's scores, so a later pod of the
// shape rescores only the nodes that changed. tests/cpp/placer_test.cc holds every route to
// "filter and score every node".
#ifndef GPUFLEET_PLACEMENT_PLACER_H_
#define GPUFLEET_PLACEMENT_PLACER_H_

#include <memory>
#include <string>
#include <vector>

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/node_classes.h"
#include "gpufleet/placement/node_plan.h"
#include "gpufleet/placement/placement.h"
#include "gpufleet/placement/score_table.h"
#include "gpufleet/placement/summary_scan.h"

namespace gpufleet {

struct QueryScoring;

class Placer {
 public:
  // The node for `q.pod` with its planned devices, or why none. Changes nothing in `state`.
  Placement Choose(const ClusterState& state, const PlacementQuery& q);

  // Choose, then reserve the answer (and commit it when `commit`, telling `q.observer`). The
  // allocation returned is the one applied. No node, with the reason, when the pod already holds
  // an allocation or nothing takes it.
  Placement Place(ClusterState& state, const PlacementQuery& q, bool commit = true);

 private:
  Placement ChooseByStrategy(const ClusterState& state, const PlacementQuery& q);
  // The two routes without candidates; each returns the node (-1: none) and may leave the
  // winner's plan in `planned`. QueryScoring (placer.cc): how this query's scores are found.
  int FullScan(const QueryScoring& s, Placement* planned);
  int CachedScan(const QueryScoring& s, ScoreTable::Entry& e, Placement* planned);
  Placement ChooseByTerms(const ClusterState& state, const PlacementQuery& q);
  // Node classes of the last state the terms route served, kept current through its change log.
  const NodeClasses& ClassesFor(const ClusterState& state, const NodeClassKey* more);

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
  ScoreTable table_;
  SummaryScan summaries_;
  std::vector<int> changed_;  // scratch
};

// Why no node takes `pod`, as kube-scheduler words it: "0/N nodes are available: 3 Insufficient
// cpu". Every node (or candidate) is asked AdmitNode; with `terms`, the terms first and then the
// node's capacity (the terms carry the labels and taints), and with `classes` one node per class
// counts for its members.
std::string NoFitReason(const ClusterState& state, const Pod& pod,
                        const std::vector<int>* candidates, const PlacementTerms* terms = nullptr,
                        const NodeClasses* classes = nullptr);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_PLACER_H_
