// The one placement question and its answer. Every host asks it the same way: the engine's
// session (with its plugins' terms and its miss cache), the simulator's device ledger, the openb
// replay (by numbered pod shapes, telling its observer), Python's Cluster through GuardedCluster,
// and the bindings. Placer::Choose answers it without changing the state; Placer::Place also
// reserves (and commits) the answer. A per-node plan (PlanOnNode) answers with the same type.
#ifndef GPUFLEET_PLACEMENT_PLACEMENT_H_
#define GPUFLEET_PLACEMENT_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpufleet/accounting/allocation.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/miss_cache.h"
#include "gpufleet/placement/observer.h"
#include "gpufleet/placement/placement_terms.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

// Where a pod goes, or why nowhere. Not fitting is an answer, not an error.
struct Placement {
  int node = -1;          // the node's index; -1 when none takes the pod
  Allocation allocation;  // its devices: planned (kReserved, not applied), or as Place applied it
  std::string reason;     // when node < 0, e.g. "0/3 nodes are available: 2 Insufficient cpu, ..."

  bool ok() const { return node >= 0; }
  static Placement None(std::string why) {
    Placement p;
    p.reason = std::move(why);
    return p;
  }
};

// What to place and how. Only `pod` and `strategy` are required; every option below changes how
// the answer is found (or remembered), never which node it names, except `candidates` and
// `terms`, which change the question.
struct PlacementQuery {
  const Pod& pod;
  const PlacementStrategy& strategy;

  // Only these nodes, ties to the earlier one in this order (the openb replay's random ties, the
  // Python `nodes=` argument). Null: every node, ties to the lower index.
  const std::vector<int>* candidates = nullptr;
  // A host's predicates and node scores (the engine's plugins) choose the node instead of the
  // strategy's score; the strategy then plans its devices. Nodes alike in spec and usage are
  // asked once when the terms allow it (NodeClasses).
  const PlacementTerms* terms = nullptr;
  // The caller's number for the pod's shape (0..N-1, pods given one number agree on everything
  // but their names): the score table finds the shape by number instead of comparing pods, and
  // keeps every numbered shape (the openb replay numbers a few hundred). -1: compare pods.
  int shape = -1;
  // Keep every node's score per pod shape and rescore only the nodes that changed since
  // (ScoreTable). Off: every call scores every node afresh. The same answer either way.
  bool use_cache = true;
  // Word the reason when no node fits ("0/N nodes are available: ..."): a Filter per node, so a
  // host that only counts failures (the openb replay) turns it off.
  bool reason = true;
  // Remembered misses: a pod whose key fits nowhere is answered from here without a scan, and a
  // new miss is recorded here (stamped `miss_version`, see MissCache::ForgetSince).
  MissCache* misses = nullptr;
  int miss_key = 0;
  uint64_t miss_version = 0;
  // Told of every pod Place commits (strategies whose score depends on which pods a node holds).
  PlacementObserver* observer = nullptr;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_PLACEMENT_H_
