// One Dynamic Resource Allocation question for one node, as the native search reads it: the
// devices the node may use (in the order Kubernetes' allocator visits them), the claims' requests
// with the devices each may take, and the claims' constraints as attribute values per device.
// Everything that needs CEL, quantities or object names is worked out before (python/gpufleet/dra
// builds it): selectors become candidate lists, attributes become small integer ids, counters and
// capacities become integers in one unit per name.
#ifndef GPUFLEET_DRA_PROBLEM_H_
#define GPUFLEET_DRA_PROBLEM_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpufleet::dra {

// Amounts taken from numbered slots (a counter of a counter set, or a capacity of a device).
using Amounts = std::vector<std::pair<int, int64_t>>;

struct Device {
  bool in_use = false;  // held by a claim allocated before this question (the ledger)
  bool multi = false;   // allowMultipleAllocations: several requests may share it, by capacity
  Amounts counters;     // shared counters this device consumes when allocated (partitionable)
  // Scoring only. `unit` is what packing fills (the counter set a partition consumes, or the
  // device itself; -1: none); `root` is the locality value (resource.kubernetes.io/pcieRoot) or -1.
  int unit = -1;
  int root = -1;
  // Devices with equal `twin` (>= 0) are interchangeable for every request and constraint: the
  // search tries one order of them only.
  int twin = -1;
};

struct Candidate {
  int device = 0;
  bool blocked = false;  // selectable, but a taint the request does not tolerate forbids it
  Amounts capacity;      // capacity slots this request consumes on the device (consumable)
  int64_t unit_take = -1;  // what taking it uses of its device's unit (scoring); -1: all of it
};

enum class Mode { kExactCount = 0, kAll = 1 };

// One request, or one subrequest of a firstAvailable list. A claim's requests form groups: a
// plain request is a group of one, a firstAvailable list a group of its subrequests in order, and
// exactly one member of every group is allocated.
struct Request {
  int claim = 0;
  int group = 0;  // index of the group within the whole problem
  Mode mode = Mode::kExactCount;
  int count = 1;  // for kAll: the number of candidates
  bool admin = false;
  std::vector<Candidate> candidates;  // selectable devices in visiting order
};

struct Constraint {
  int claim = 0;
  bool distinct = false;       // distinctAttribute; otherwise matchAttribute
  std::vector<int> requests;   // the requests (subrequests) it applies to
  // Per device: the attribute's value ids, sorted (one for a scalar attribute, several for a
  // list); empty when the device lacks the attribute.
  std::vector<std::vector<int>> values;
};

enum class Objective {
  kFirst = 0,  // the first allocation in visiting order, as Kubernetes' allocator picks
  kPack = 1,   // fewest newly opened units, then the fullest units (best fit)
};

struct Problem {
  std::vector<Device> devices;
  std::vector<int64_t> counter_free;   // per counter slot, what the ledger leaves
  std::vector<int64_t> capacity_free;  // per capacity slot, what the ledger leaves
  std::vector<int64_t> unit_free;      // per unit, what the ledger leaves
  std::vector<uint8_t> unit_opened;    // per unit, 1 when the ledger already uses some of it
  std::vector<Request> requests;       // claim by claim, group by group, member by member
  int num_claims = 0;
  int num_groups = 0;
  std::vector<Constraint> constraints;
  int max_devices_per_claim = 32;  // resourceapi.AllocationResultsMaxSize
  Objective objective = Objective::kPack;
  bool locality = false;   // also prefer fewer distinct `root` values per claim
  int64_t budget = 200000;  // search steps before giving up
  // How Kubernetes' allocator visits devices within one request: every order of them (its
  // "stable" implementation) or each set once, in visiting order (the implementations that
  // serve the consumable-capacity, binding and list-attribute features). Only the order-dependent
  // error and Objective::kFirst see the difference.
  bool combinations = false;
};

// Scores of an allocation, compared in this order; lower is better.
struct Score {
  int roots = 0;         // distinct locality roots (when Problem::locality)
  int opened = 0;        // units used now that the ledger left untouched
  int64_t leftover = 0;  // what touched units keep free afterwards
  bool operator<(const Score& o) const;
  bool operator==(const Score&) const = default;
};

struct Choice {
  int request = 0;
  int device = 0;
  int candidate = 0;  // index into the request's candidates
};

enum class Verdict { kAllocated = 0, kUnallocatable = 1, kError = 2 };

struct Result {
  Verdict verdict = Verdict::kUnallocatable;
  std::vector<Choice> choices;  // claim by claim, request by request, in device order
  Score score;
  std::string reason;  // why unallocatable (or the error)
  int64_t steps = 0;
  bool gave_up = false;  // the budget ran out before the search could decide
  bool proved_best = false;  // the search finished: no valid allocation scores better
  // For kError: the All-mode request and device a constraint refused.
  int error_request = -1;
  int error_device = -1;
};

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_PROBLEM_H_
