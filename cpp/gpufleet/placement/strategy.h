// Device choice on one node. A strategy answers two narrow questions: how good a feasible node is
// for a pod (score), and which devices of a node to give a request (choose). Constraints (NVLink
// partition sizes, a required PCIe/NUMA scope) are applied by the mechanism before a strategy is
// asked, as the list of domains a choice must fall into.
#ifndef GPUFLEET_PLACEMENT_STRATEGY_H_
#define GPUFLEET_PLACEMENT_STRATEGY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "absl/types/span.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/core/registry.h"

namespace gpufleet {

// What a strategy declares in its registration. Both default to false, the safe answer: a
// strategy gets a fast path only where it says so (see Deterministic() and ConcurrentSafe()).
struct StrategyTraits {
  bool deterministic = false;
  bool concurrent_safe = false;
  Json ToJson() const;
};

class PlacementStrategy : public Registrant<StrategyTraits> {
 public:
  static constexpr char kKind[] = "placement strategy";
  PlacementStrategy() : instance_id_(NextInstanceId()) {}
  virtual ~PlacementStrategy() = default;

  // Node score in [0, 100], higher is better; `plan` holds the devices this strategy would choose
  // on the node (empty for pods without devices).
  virtual double ScoreNode(const NodeView& node, const Pod& pod,
                           absl::Span<const DeviceGrant> plan) const = 0;

  // Chooses `request.count` devices. Each domain lists local device indices (ascending minor) that
  // fit the request and satisfy the constraints; the chosen devices must all come from one domain.
  // Returns false when no domain can serve the request.
  virtual bool ChooseDevices(const NodeView& node, const DeviceRequest& request,
                             const std::vector<std::vector<int>>& domains,
                             std::vector<int>* chosen) const = 0;

  // True when ScoreNode reads `plan`; otherwise the mechanism may score from node totals alone
  // and plan devices only on the winning node (the fast path for big clusters).
  virtual bool ScoreNeedsPlan() const { return false; }

  // +1 / -1 for strategies that score by allocation alone (AllocationScoredStrategy in
  // node_score.h: MostAllocated / LeastAllocated), 0 otherwise. Lets the Placer score many
  // nodes from their summaries in one tight loop with the same arithmetic (summary_scan.h).
  virtual int AllocationScoreSign() const { return 0; }

  // True when a node's score and device choice depend only on that node's state and the pod's
  // request (no random draws, no clock). Lets the Placer keep a node's score for a pod shape
  // until the node changes (score_table.h); a strategy with a seeded generator must answer false,
  // or a reused score would skip a draw (the table then keeps only which nodes fit).
  bool Deterministic() const { return traits().deterministic; }

  // True when the const calls above may run from many threads at once: the strategy keeps no
  // memo, generator or scratch between calls. A strategy that does (fgd's memo, random's
  // generator) answers false, and its owner serialises every use of it (GuardedCluster takes its
  // exclusive lock for such a strategy even for a score).
  bool ConcurrentSafe() const { return traits().concurrent_safe; }

  // Unique per object for the process lifetime (addresses can be reused; ids are not), so cached
  // scores are never taken for another strategy's.
  uint64_t instance_id() const { return instance_id_; }

 private:
  static uint64_t NextInstanceId() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t instance_id_;
};

// Builds a registered strategy from "name" or "name(k=v,...)".
absl::StatusOr<std::unique_ptr<PlacementStrategy>> MakeStrategy(const std::string& spec);

// Strategies by spec string, each built on first use and owned here. Every cluster keeps its own
// cache, so a strategy's memo or generator is never shared with another cluster: two clusters
// placing with "random(seed=1)" in parallel draw the same numbers as each would alone. Get is
// thread-safe and the strategies live as long as the cache; using one that is not
// ConcurrentSafe() is the owner's to serialise.
class StrategyCache {
 public:
  absl::StatusOr<PlacementStrategy*> Get(const std::string& spec);

 private:
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<PlacementStrategy>> by_spec_;
};

// Picks `count` devices per domain by `better` (a strict weak order on local indices, ties broken
// by lower minor) and returns the best domain's pick by `domain_better` on the picked sets (equal
// picks go to the lower minors). Shared by binpack and spread, and usable by new strategies.
// gpushare's best fit: less free memory first, then less free core. Shared by binpack and
// topology.
inline auto BestFitLess(const NodeView& v) {
  return [&v](int a, int b) {
    if (v.free_memory(a) != v.free_memory(b)) return v.free_memory(a) < v.free_memory(b);
    return v.free_core(a) < v.free_core(b);
  };
}

template <typename DeviceLess, typename SetLess>
bool ChooseByOrder(const NodeView& node, int count, const std::vector<std::vector<int>>& domains,
                   DeviceLess better, SetLess domain_better, std::vector<int>* chosen);

}  // namespace gpufleet

#include "gpufleet/placement/strategy_inl.h"

#endif  // GPUFLEET_PLACEMENT_STRATEGY_H_
