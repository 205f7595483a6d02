#include "gpufleet/placement/guarded_cluster.h"

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet {

GuardedCluster::GuardedCluster(ClusterState state) : owned_(std::make_unique<Owned>()) {
  owned_->state = std::move(state);
  state_ = &owned_->state;
  lock_ = &owned_->lock;
  strategies_ = &owned_->strategies;
}

GuardedCluster GuardedCluster::Borrow(ClusterState* state, ObjectLock* lock,
                                      StrategyCache* strategies) {
  return GuardedCluster(state, lock, strategies);
}

absl::StatusOr<const PlacementStrategy*> GuardedCluster::Strategy(const std::string& spec) const {
  ASSIGN_OR_RETURN(PlacementStrategy * strategy, strategies_->Get(spec));
  return strategy;
}

absl::StatusOr<Placement> GuardedCluster::Place(const Pod& pod, const std::string& strategy,
                                                bool commit,
                                                const std::vector<std::string>* nodes) {
  ASSIGN_OR_RETURN(const PlacementStrategy* st, Strategy(strategy));
  return Write([&](ClusterState& s) -> absl::StatusOr<Placement> {
    std::vector<int> candidates;
    if (nodes != nullptr) {
      ASSIGN_OR_RETURN(candidates, NodeIndices(s, *nodes));
    }
    return placer_->Place(
        s, {.pod = pod, .strategy = *st, .candidates = nodes ? &candidates : nullptr}, commit);
  });
}

absl::StatusOr<std::vector<int>> GuardedCluster::PlaceMany(absl::Span<const Pod> pods,
                                                           const std::string& strategy) {
  ASSIGN_OR_RETURN(const PlacementStrategy* st, Strategy(strategy));
  return Write([&](ClusterState& s) {
    std::vector<int> out(pods.size(), -1);
    for (size_t k = 0; k < pods.size(); ++k) {
      const Placement p = placer_->Place(s, {.pod = pods[k], .strategy = *st});
      out[k] = p.node;
    }
    return out;
  });
}

GuardedCluster GuardedCluster::Copy() const {
  return GuardedCluster(Read([](const ClusterState& s) { return ClusterState(s); }));
}

bool GuardedCluster::Equals(const GuardedCluster& other) const {
  if (lock_ == other.lock_) return Read([&](const ClusterState& s) { return s == *other.state_; });
  const ClusterState theirs = other.Read([](const ClusterState& s) { return ClusterState(s); });
  return Read([&](const ClusterState& s) { return s == theirs; });
}

absl::StatusOr<std::vector<int>> NodeIndices(const ClusterState& state,
                                             const std::vector<std::string>& names) {
  std::vector<int> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    const int i = state.FindNode(name);
    if (i < 0) return absl::NotFoundError(absl::StrFormat("node %s does not exist", name));
    out.push_back(i);
  }
  return out;
}

}  // namespace gpufleet
