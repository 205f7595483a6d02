// What a gang asks of the topology, in one vocabulary for the three anchors:
//   Kueue: podset-required-topology L      -> required = L
//          podset-preferred-topology L     -> preferred = L (then every wider level, then spread)
//          podset-unconstrained-topology   -> neither (any nodes of the topology)
//          podset-slice-required-topology L with slice size S -> slice_level = L, slice_size = S
//          a PodSet group (leader + workers) in one domain -> groups under the gang's constraint
//   KAI:   topology-required-placement R and topology-preferred-placement P -> required R,
//          preferred P (P at or below R), per sub-group as well as for the whole pod group
//   Volcano: networkTopology mode hard with highestTierAllowed t -> VolcanoConstraint (required
//          tier t, preferred the narrowest tier); mode soft -> preferred the narrowest tier only;
//          a partition of size S at a tier -> a slice.
// Where they differ, Kueue's meaning is the default: `fit` picks the domain rule by name.
#ifndef GPUFLEET_TOPOLOGY_GANG_REQUEST_H_
#define GPUFLEET_TOPOLOGY_GANG_REQUEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::topology {

// How a domain is chosen among those that can take the pods, and how pods go down inside it.
enum class Fit {
  // Kueue's default: the domain with the least capacity that still fits; inside it, children
  // largest first, the last one the smallest child that takes the remainder.
  kBestFit,
  // Kueue's LeastFreeCapacity: the tightest domain; inside it, children least free first (fills
  // small gaps, as for unconstrained pod sets).
  kLeastFreeCapacity,
  // Kueue's former default (TASLargestFit): the domain with the most capacity, children largest
  // first.
  kLargestFit,
  // Fragmentation-aware (gpufleet's own): prefer a domain the gang completes or fits tightly,
  // keep untouched domains whole, and lose the fewest future gangs (fragmentation.h).
  kFragmentation,
};
const char* FitName(Fit fit);
absl::StatusOr<Fit> ParseFit(const std::string& name);  // best-fit, least-free-capacity, ...

// Where pods must or may go. Level names as Topology::LevelIndex reads them (name or label).
struct Constraint {
  std::string required;   // every pod within one domain of this level; empty: no requirement
  std::string preferred;  // tried first, then each wider level up to `required` (or spread)
  std::string slice_level;  // every slice of `slice_size` pods within one domain of this level
  int slice_size = 0;
  // Kueue's balanced placement: spread the pods evenly over the fewest domains one level below
  // the chosen one (12 pods on two racks of 10 free: 6 and 6, not 10 and 2).
  bool balanced = false;
  bool empty() const { return required.empty() && preferred.empty() && slice_level.empty(); }
};

// One kind of pod in the gang: a leader, workers.
struct GroupRequest {
  std::string name;
  Pod pod;    // the shape every pod of the group has (its name is ignored)
  int count = 0;
  Constraint constraint;
};

struct GangRequest {
  std::string name;
  std::vector<GroupRequest> groups;
  Constraint constraint;  // all groups together (a slice here is not allowed)
  Fit fit = Fit::kBestFit;
};

// Volcano's networkTopology on a topology read from HyperNodes: "hard" keeps the gang inside one
// HyperNode of tier <= highest_tier (searching from the narrowest tier up), "soft" only prefers
// the narrowest tier. Errors: another mode, a tier the topology does not have.
absl::StatusOr<Constraint> VolcanoConstraint(const Topology& topology, const std::string& mode,
                                             int highest_tier);

// A constraint with its levels resolved to indices (-1: not given).
struct ResolvedConstraint {
  int required = -1, preferred = -1, slice_level = -1, slice_size = 0;
  bool balanced = false;
  bool any() const { return required >= 0 || preferred >= 0 || slice_level >= 0; }
};

// Resolves and checks every level name. Errors, one line naming the gang and group: an unknown
// level, preferred wider than required, a slice level wider than required, a slice size below 1
// or not dividing the group's count, a count below 1, no groups, a slice on the gang itself.
absl::StatusOr<std::vector<ResolvedConstraint>> ResolveRequest(const Topology& topology,
                                                               const GangRequest& request,
                                                               ResolvedConstraint* gang);

}  // namespace gpufleet::topology

#endif  // GPUFLEET_TOPOLOGY_GANG_REQUEST_H_
