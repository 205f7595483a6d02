#include "gpufleet/placement/node_score_cache.h"

#include <algorithm>

namespace gpufleet {
namespace {
// Everything but the name decides where a pod may go and how nodes score for it; comparing the
// whole struct (with the name made equal) keeps that true when Pod gains a field.
bool SameShape(Pod& shape, const Pod& pod) {
  if (shape.cpu_milli != pod.cpu_milli || shape.memory_bytes != pod.memory_bytes ||
      shape.devices != pod.devices)
    return false;
  shape.name = pod.name;
  return shape == pod;
}
}  // namespace

NodeScoreCache::Entry& NodeScoreCache::Get(uint64_t strategy_id, const Pod& pod, int num_nodes) {
  ++clock_;
  Entry* found = nullptr;
  for (Entry& e : entries_) {
    if (e.strategy_id == strategy_id && SameShape(e.shape, pod)) {
      found = &e;
      break;
    }
  }
  if (found == nullptr) {
    if (static_cast<int>(entries_.size()) < kMaxEntries) {
      found = &entries_.emplace_back();
    } else {
      found = &*std::min_element(entries_.begin(), entries_.end(),
                                 [](const Entry& a, const Entry& b) {
                                   return a.last_use < b.last_use;
                                 });
      found->score.clear();
      found->seen.clear();
      found->best = BestScoreTree();
      found->log_id = 0;
    }
    found->strategy_id = strategy_id;
    found->shape = pod;
  }
  found->last_use = clock_;
  // New nodes start unseen (version 0 is never a node's version).
  found->score.resize(num_nodes, kInfeasible);
  found->seen.resize(num_nodes, 0);
  return *found;
}

}  // namespace gpufleet
