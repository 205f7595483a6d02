// Counting before searching: can the devices still free serve what the remaining requests need?
// Each device a request must hold alone serves one unit of demand (a bipartite matching of
// demand to devices, found by augmenting paths); devices shared by capacity and admin-access
// requests are judged by counts only. A "no" is a proof that no allocation exists from this
// state; a "yes" lets the search go on. Unset matchAttribute constraints are tried value by value.
#ifndef GPUFLEET_DRA_BOUND_H_
#define GPUFLEET_DRA_BOUND_H_

#include <vector>

#include "gpufleet/dra/problem.h"
#include "gpufleet/dra/search_state.h"

namespace gpufleet::dra {

struct Need {
  int request = 0;
  int remaining = 0;   // devices still to choose
  int from = 0;        // the first candidate still allowed (combinations are chosen in order)
};

class DemandBound {
 public:
  explicit DemandBound(const Problem& problem);
  // False when the needs cannot all be met from `state`.
  bool Fits(const SearchState& state, const std::vector<Need>& needs);

 private:
  bool FitsWith(const SearchState& state, const std::vector<Need>& needs, int pinned_constraint,
                int pinned_value);
  bool Augment(int slot, std::vector<int>& seen_stamp, int stamp);

  const Problem& problem_;
  // Scratch for one matching.
  std::vector<std::vector<int>> slot_devices_;
  std::vector<int> device_slot_;
  std::vector<int> slot_device_;
  std::vector<int> seen_;
};

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_BOUND_H_
