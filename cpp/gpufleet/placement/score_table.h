// Every node's score for a pod shape, kept until the node changes, so that placing many pods of
// one shape (a Deployment's replicas, a job's workers, the openb trace's few hundred shapes)
// scores again only the nodes that changed since that shape's last pod. kube-scheduler's old
// equivalence cache, made exact: a score is stamped with the node's version, and ClusterState
// stamps a new version on every change, so a stale score is always recomputed and the answer is
// the full scan's (tests/cpp/score_table_test.cc, placer_test.cc).
//
// One table serves every scan. A shape is found by the caller's number (the openb replay numbers
// its shapes; every numbered shape is kept), or by comparing pods (the kMaxEntries most recently
// used shapes are kept); a scan that keeps nothing (PlacementQuery::use_cache off) fills the
// table's scratch entry. Finding which nodes changed costs only them: an entry remembers where
// it stopped reading the state's ChangeLog and keeps a tournament tree over its scores
// (BestScoreTree) that names the best node after replaying each change up one path.
#ifndef GPUFLEET_PLACEMENT_SCORE_TABLE_H_
#define GPUFLEET_PLACEMENT_SCORE_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/best_score_tree.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/placement/summary_scan.h"

namespace gpufleet {

class ScoreTable {
 public:
  // What an entry's scores are; an entry asked for another kind starts afresh.
  enum class Kind : uint8_t {
    kSummary,   // from the node summaries: the node may fit; its devices are checked when chosen
    kExact,     // the strategy's score of a node that fits
    kFeasible,  // 0 for a node that fits: a strategy with random draws scores afresh every time
  };

  struct Entry {
    Kind kind = Kind::kSummary;
    std::vector<double> score;   // per node; kNoNode where the pod cannot go
    std::vector<uint64_t> seen;  // the node version `score` belongs to; 0 = never
    BestScoreTree best;          // over `score`; rebuilt when its size is not the node count
    // Per node: 0 where too few GPUs are of a model the pod accepts (never worth asking); null
    // when the pod accepts any model.
    const uint8_t* models = nullptr;

    // What the shape asks in the summaries' terms, worked out on first use.
    std::optional<SummaryRequest> request;

    // The key, and where this entry stopped reading a state's ChangeLog (log id 0: none yet).
    uint64_t strategy_id = 0;
    Pod shape;  // a pod of this shape, for entries found by comparing pods
    uint64_t log_id = 0, log_position = 0;
    uint64_t last_use = 0;
    uint64_t models_generation = 0;

    bool fresh() const { return log_id == 0; }  // nothing scored yet
  };

  ScoreTable() = default;
  // A copy starts empty: entries point into their own mask table, and are cheap to rebuild.
  ScoreTable(const ScoreTable&) {}
  ScoreTable& operator=(const ScoreTable&) {
    Clear();
    return *this;
  }
  ScoreTable(ScoreTable&&) = default;
  ScoreTable& operator=(ScoreTable&&) = default;

  // The entry for `pod`'s shape under `strategy`: by the caller's `number` when >= 0 (pods given
  // one number must agree on everything but their names), else by comparing pods.
  Entry& Find(const ClusterState& state, const PlacementStrategy& strategy, const Pod& pod,
              int number);
  // Ready for scores of `kind` over the state's nodes: an entry of another kind is emptied,
  // new nodes start unseen, and the model mask follows the node set.
  void Prepare(const ClusterState& state, Entry& e, const Pod& pod, Kind kind);
  // An entry that remembers nothing: every node unseen.
  Entry& Scratch(const ClusterState& state, const Pod& pod, Kind kind);

  // The nodes whose version moved since `e` last looked, each marked seen. From the state's
  // change log when `e` read this very log, its position is still there and fewer entries than
  // nodes follow it: true, and `e.best` may be updated node by node. Else by comparing every
  // version: false, and `e.best` must be rebuilt (kFeasible entries keep none).
  static bool Changed(const ClusterState& state, Entry& e, std::vector<int>* changed);
  // Every node marked seen as of now, and the log read to its end.
  static void MarkAllSeen(const ClusterState& state, Entry& e);

  void Clear();
  int size() const { return static_cast<int>(recent_.size()); }  // entries found by pod
  static constexpr int kMaxEntries = 32;

 private:
  void Reset(Entry& e, Kind kind, int num_nodes);
  // Drops the model masks (and so every entry's pointer) when the node set changed.
  void SyncMasks(const ClusterState& state);
  // Per node, whether enough GPUs are of a model `pod` accepts; null when it accepts any. Shared
  // by every shape with the same GPU count and models, kept while the node set is the same.
  const uint8_t* ModelMask(const ClusterState& state, const Pod& pod);

  std::vector<Entry> recent_;    // found by comparing pods
  std::vector<Entry> numbered_;  // by the caller's number
  Entry scratch_;
  uint64_t clock_ = 0;
  // Model masks and the node set they describe (the state's log id and node count).
  absl::node_hash_map<std::string, std::vector<uint8_t>> masks_;
  uint64_t masks_log_id_ = 0;
  int masks_nodes_ = -1;
  uint64_t masks_generation_ = 1;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_SCORE_TABLE_H_
