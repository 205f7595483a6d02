// Node scores remembered per pod shape, so that placing many pods of the same shape (the replicas
// of one Deployment, the workers of one job) does not filter and score every unchanged node again.
// The idea is the equivalence cache kube-scheduler once had, made exact: an entry holds, for one
// (strategy, pod shape), every node's score as of that node's version; ClusterState bumps a node's
// version on every change, so a stale score is always recomputed and a cached answer is exactly the
// full scan's answer (tests/cpp/node_score_cache_test.cc checks this against the uncached scan).
#ifndef GPUFLEET_PLACEMENT_NODE_SCORE_CACHE_H_
#define GPUFLEET_PLACEMENT_NODE_SCORE_CACHE_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "gpufleet/core/pod.h"
#include "gpufleet/placement/best_score_tree.h"

namespace gpufleet {

class NodeScoreCache {
 public:
  // A node the pod cannot use.
  static constexpr double kInfeasible = -std::numeric_limits<double>::infinity();

  struct Entry {
    uint64_t strategy_id = 0;
    Pod shape;                     // a pod of this shape (its name is not part of the key)
    std::vector<double> score;     // per node; kInfeasible when it does not fit
    std::vector<uint64_t> seen;    // the node version `score` was computed at; 0 = never
    BestScoreTree best;            // over `score`; rebuilt when its size is not the node count
    // Where this entry stopped reading a state's ChangeLog (log id 0: read no log yet).
    uint64_t log_id = 0, log_position = 0;
    uint64_t last_use = 0;
  };

  NodeScoreCache() = default;
  // A copied or moved-into ClusterState starts cold: entries are cheap to rebuild and costly to
  // copy, and a copy's node versions diverge from the original's from then on.
  NodeScoreCache(const NodeScoreCache&) {}
  NodeScoreCache& operator=(const NodeScoreCache&) {
    entries_.clear();
    return *this;
  }

  // The entry for (strategy, pod shape), created empty (evicting the least recently used one
  // beyond `kMaxEntries`) and sized to `num_nodes`.
  Entry& Get(uint64_t strategy_id, const Pod& pod, int num_nodes);
  // Node indices shifted (a node was removed): nothing cached is valid any more.
  void Clear() { entries_.clear(); }
  int size() const { return static_cast<int>(entries_.size()); }

  static constexpr int kMaxEntries = 32;

 private:
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NODE_SCORE_CACHE_H_
