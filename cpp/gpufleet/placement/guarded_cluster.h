// A ClusterState that many threads may use at once: the state, the lock that serialises it
// (ObjectLock) and the strategies it places with (StrategyCache) travel together. Readers (filter,
// queries, snapshots, plans and scores by a ConcurrentSafe strategy) share the lock; anything that
// changes the state, or a strategy's memo or generator (place, reserve, release, scores by fgd or
// random), holds it alone. Python's Cluster is this class; an engine's cluster is a borrowed one
// that shares the engine's lock, so a cycle and a call on its cluster never overlap.
#ifndef GPUFLEET_PLACEMENT_GUARDED_CLUSTER_H_
#define GPUFLEET_PLACEMENT_GUARDED_CLUSTER_H_

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/accounting/object_lock.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

class GuardedCluster {
 public:
  GuardedCluster() : GuardedCluster(ClusterState()) {}
  explicit GuardedCluster(ClusterState state);
  // A view of a state owned elsewhere (an engine's), serialised by the owner's lock and placing
  // with the owner's strategies. The three must outlive the view.
  static GuardedCluster Borrow(ClusterState* state, ObjectLock* lock, StrategyCache* strategies);

  GuardedCluster(GuardedCluster&&) = default;
  GuardedCluster& operator=(GuardedCluster&&) = default;

  ObjectLock& lock() const { return *lock_; }

  // f(const ClusterState&) under the shared lock; f(ClusterState&) under the exclusive one. `f`
  // returns by value: nothing it hands out may point into the state after the lock is gone.
  template <typename F>
  auto Read(F&& f) const {
    std::shared_lock<ObjectLock> hold(*lock_);
    return std::forward<F>(f)(std::as_const(*state_));
  }
  template <typename F>
  auto Write(F&& f) {
    std::unique_lock<ObjectLock> hold(*lock_);
    return std::forward<F>(f)(*state_);
  }
  // A question that asks `strategy` (plan, score): shared when the strategy is ConcurrentSafe,
  // exclusive otherwise, since its memo or generator changes.
  template <typename F>
  auto ReadWith(const PlacementStrategy& strategy, F&& f) const {
    if (strategy.ConcurrentSafe()) {
      std::shared_lock<ObjectLock> hold(*lock_);
      return std::forward<F>(f)(std::as_const(*state_));
    }
    std::unique_lock<ObjectLock> hold(*lock_);
    return std::forward<F>(f)(std::as_const(*state_));
  }

  // This cluster's instance of a strategy (built on first use; the same for the cluster's life).
  absl::StatusOr<const PlacementStrategy*> Strategy(const std::string& spec) const;

  // Placer::Place under the exclusive lock, over every node or the `nodes` named (NotFound
  // for an unknown name, checked under the same lock).
  absl::StatusOr<Placement> Place(const Pod& pod, const std::string& strategy, bool commit = true,
                                  const std::vector<std::string>* nodes = nullptr);
  // Places `pods` in order as one call (no other call interleaves); each pod's node index, or -1
  // when it did not fit.
  absl::StatusOr<std::vector<int>> PlaceMany(absl::Span<const Pod> pods,
                                             const std::string& strategy);

  // This view's node choice (with its score cache); use it only under the exclusive lock (Write).
  Placer& placer() { return *placer_; }

  // A deep copy of the state as it was at one instant; the copy has its own lock and starts with
  // no strategies (fresh memos, generators from their seeds).
  GuardedCluster Copy() const;
  // Equal states: copies `other`'s state under its lock, then compares under this one's. It never
  // holds two locks at once, so it can take no part in a lock-order cycle (see ObjectLock).
  bool Equals(const GuardedCluster& other) const;

 private:
  GuardedCluster(ClusterState* state, ObjectLock* lock, StrategyCache* strategies)
      : state_(state), lock_(lock), strategies_(strategies) {}

  struct Owned {
    ClusterState state;
    ObjectLock lock{"cluster"};
    StrategyCache strategies;
  };
  std::unique_ptr<Owned> owned_;  // null for a borrowed view
  // Node choice for this view (its score cache); used under the exclusive lock only.
  std::unique_ptr<Placer> placer_ = std::make_unique<Placer>();
  ClusterState* state_;
  ObjectLock* lock_;
  StrategyCache* strategies_;
};

// The indices of the nodes named, or NotFound naming the first unknown one.
absl::StatusOr<std::vector<int>> NodeIndices(const ClusterState& state,
                                             const std::vector<std::string>& names);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_GUARDED_CLUSTER_H_
