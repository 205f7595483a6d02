// What an allocation in progress holds: devices taken, counters and capacity consumed, and the
// claims' constraints as the devices added so far leave them. Both searches (search.h and
// upstream_order.h) add and remove devices through it, so both apply the same rules, in the
// order Kubernetes' allocator checks them: in use, counters, taints, constraints, capacity.
#ifndef GPUFLEET_DRA_SEARCH_STATE_H_
#define GPUFLEET_DRA_SEARCH_STATE_H_

#include <cstdint>
#include <vector>

#include "gpufleet/dra/problem.h"

namespace gpufleet::dra {

enum class AddResult { kOk, kInUse, kCounters, kBlocked, kConstraint, kCapacity };

class SearchState {
 public:
  explicit SearchState(const Problem& problem);

  // Adds candidate `c` of request `r` when every rule allows it; otherwise changes nothing and
  // says which rule refused first.
  AddResult TryAdd(int r, int c);
  // Undoes a successful TryAdd(r, c); removals come in the reverse order of the additions.
  void Remove(int r, int c);

  // The rules that do not depend on constraints: may `r` take candidate `c` now?
  bool Available(int r, int c) const;
  // Whether a device can still be taken by a request that needs it alone (for the bounds).
  bool ExclusiveFree(int device) const { return holders_[device] == 0 && !problem_.devices[device].in_use; }
  // Whether constraint `k` would accept the device's values now.
  bool ConstraintAccepts(int k, int device) const;
  // Whether constraint `k` has no device yet (a matchAttribute value is still open).
  bool ConstraintOpen(int k) const { return constraint_state_[k].sets.empty(); }
  const std::vector<int>& ConstraintsOf(int r) const { return constraints_of_[r]; }

 private:
  const Problem& problem_;
  std::vector<int> holders_;                    // per device: requests of this allocation on it
  std::vector<std::vector<int>> claim_holds_;   // per claim, per device: times taken
  std::vector<int64_t> counter_used_;
  std::vector<int64_t> capacity_used_;
  struct ConstraintState {
    std::vector<std::vector<int>> sets;  // match: running intersections; distinct: each device's set
  };
  std::vector<ConstraintState> constraint_state_;
  std::vector<std::vector<int>> constraints_of_;  // per request
};

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_SEARCH_STATE_H_
