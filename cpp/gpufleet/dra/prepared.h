// One allocation question kept in three parts, so that alike nodes and repeated questions share
// what does not change: what a node offers (NodeTable: devices by position, counters, capacities,
// packing units; one per node profile), what a set of claims asks of such a node (ClaimRequests:
// candidates per request, constraint values per device, which devices are interchangeable; one
// per claim shape and node profile, made once from the CEL verdicts) and what earlier claims hold
// on one node (Held). BuildProblem joins the three into the Problem the search answers, and
// HoldChoices adds an answer to a Held (or takes it away), so a host that keeps Helds (the batch
// engine, DraCluster's node groups) never rebuilds a question from objects.
#ifndef GPUFLEET_DRA_PREPARED_H_
#define GPUFLEET_DRA_PREPARED_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/dra/problem.h"

namespace gpufleet::dra {

// What one node offers, by position. `devices` carry multi, counters, unit and root (in_use and
// twin are per question). A unit is either a counter set (its counter slots) or one device.
struct NodeTable {
  std::vector<Device> devices;
  std::vector<int64_t> counter_total;   // per counter slot
  std::vector<int64_t> capacity_total;  // per capacity slot (of shared devices)
  std::vector<int> capacity_device;     // per capacity slot: its device
  std::vector<std::vector<int>> unit_counters;  // per unit: its counter slots (a counter set)
  std::vector<int> unit_device;                 // per unit: its device, or -1 for a counter set
};

// What a set of claims (allocated together) asks of a node of one table.
struct ClaimRequests {
  std::vector<Request> requests;
  int num_claims = 0;
  int num_groups = 0;
  std::vector<Constraint> constraints;
  // Per device: devices with equal signatures (>= 0) are interchangeable when both are free or
  // both held; -1: never (shared devices).
  std::vector<int> twin_signature;
  bool combinations = false;  // see Problem::combinations
};

// What earlier claims hold on one node.
struct Held {
  std::vector<uint8_t> in_use;          // per device: held whole by a claim
  std::vector<int> sharers;             // per device: claims' results consuming its capacity
  std::vector<int64_t> capacity_used;   // per capacity slot
  std::vector<int64_t> counter_used;    // per counter slot, by devices published for other nodes
};

// InvalidArgument naming what is out of range (slots, units, devices).
absl::Status ValidateTable(const NodeTable& table);
// The requests against a table of this shape (checked by building the problem with nothing held).
absl::Status ValidateRequests(const NodeTable& table, const ClaimRequests& requests);
absl::Status ValidateHeld(const NodeTable& table, const Held& held);

// Nothing held on a node of this table.
Held EmptyHeld(const NodeTable& table);

// The question for `requests` on a node of `table` where `held` is held. The three must have
// been validated together (sizes match).
Problem BuildProblem(const NodeTable& table, const ClaimRequests& requests, const Held& held,
                     Objective objective, int64_t budget);

// Adds (sign +1) or removes (sign -1) what an allocation holds: admin-access requests hold
// nothing, shared devices their consumed capacity, other devices themselves. Removing undoes
// adding the same choices.
void HoldChoices(const NodeTable& table, const ClaimRequests& requests,
                 const std::vector<Choice>& choices, int sign, Held& held);

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_PREPARED_H_
