#include "gpufleet/dra/search_state.h"

#include <algorithm>
#include <iterator>

namespace gpufleet::dra {
namespace {

bool Disjoint(const std::vector<int>& a, const std::vector<int>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return false;
    if (*i < *j) ++i; else ++j;
  }
  return true;
}

}  // namespace

SearchState::SearchState(const Problem& problem)
    : problem_(problem),
      holders_(problem.devices.size(), 0),
      claim_holds_(problem.num_claims, std::vector<int>(problem.devices.size(), 0)),
      counter_used_(problem.counter_free.size(), 0),
      capacity_used_(problem.capacity_free.size(), 0),
      constraint_state_(problem.constraints.size()),
      constraints_of_(problem.requests.size()) {
  for (int k = 0; k < static_cast<int>(problem.constraints.size()); ++k)
    for (int r : problem.constraints[k].requests) constraints_of_[r].push_back(k);
}

bool SearchState::Available(int r, int c) const {
  const Request& req = problem_.requests[r];
  const Candidate& cand = req.candidates[c];
  const Device& dev = problem_.devices[cand.device];
  if (!dev.multi) {
    if (req.admin) {
      if (claim_holds_[req.claim][cand.device] > 0) return false;
    } else if (dev.in_use || holders_[cand.device] > 0) {
      return false;
    }
  }
  for (const auto& [slot, amount] : dev.counters)
    if (counter_used_[slot] + amount > problem_.counter_free[slot]) return false;
  if (cand.blocked) return false;
  for (const auto& [slot, amount] : cand.capacity)
    if (capacity_used_[slot] + amount > problem_.capacity_free[slot]) return false;
  return true;
}

bool SearchState::ConstraintAccepts(int k, int device) const {
  const Constraint& con = problem_.constraints[k];
  const std::vector<int>& v = con.values[device];
  if (v.empty()) return false;
  const auto& sets = constraint_state_[k].sets;
  if (sets.empty()) return true;
  if (con.distinct) {
    for (const auto& s : sets)
      if (!Disjoint(s, v)) return false;
    return true;
  }
  return !Disjoint(sets.back(), v);
}

AddResult SearchState::TryAdd(int r, int c) {
  const Request& req = problem_.requests[r];
  const Candidate& cand = req.candidates[c];
  const Device& dev = problem_.devices[cand.device];
  if (!dev.multi) {
    if (req.admin) {
      if (claim_holds_[req.claim][cand.device] > 0) return AddResult::kInUse;
    } else if (dev.in_use || holders_[cand.device] > 0) {
      return AddResult::kInUse;
    }
  }
  for (const auto& [slot, amount] : dev.counters)
    if (counter_used_[slot] + amount > problem_.counter_free[slot]) return AddResult::kCounters;
  if (cand.blocked) return AddResult::kBlocked;
  for (int k : constraints_of_[r])
    if (!ConstraintAccepts(k, cand.device)) return AddResult::kConstraint;
  for (const auto& [slot, amount] : cand.capacity)
    if (capacity_used_[slot] + amount > problem_.capacity_free[slot]) return AddResult::kCapacity;
  // Apply.
  if (!dev.multi) ++holders_[cand.device];
  ++claim_holds_[req.claim][cand.device];
  for (const auto& [slot, amount] : dev.counters) counter_used_[slot] += amount;
  for (const auto& [slot, amount] : cand.capacity) capacity_used_[slot] += amount;
  for (int k : constraints_of_[r]) {
    const Constraint& con = problem_.constraints[k];
    auto& sets = constraint_state_[k].sets;
    const std::vector<int>& v = con.values[cand.device];
    if (con.distinct || sets.empty()) {
      sets.push_back(v);
    } else {
      std::vector<int> both;
      std::set_intersection(sets.back().begin(), sets.back().end(), v.begin(), v.end(),
                            std::back_inserter(both));
      sets.push_back(std::move(both));
    }
  }
  return AddResult::kOk;
}

void SearchState::Remove(int r, int c) {
  const Request& req = problem_.requests[r];
  const Candidate& cand = req.candidates[c];
  const Device& dev = problem_.devices[cand.device];
  if (!dev.multi) --holders_[cand.device];
  --claim_holds_[req.claim][cand.device];
  for (const auto& [slot, amount] : dev.counters) counter_used_[slot] -= amount;
  for (const auto& [slot, amount] : cand.capacity) capacity_used_[slot] -= amount;
  for (int k : constraints_of_[r]) constraint_state_[k].sets.pop_back();
}

}  // namespace gpufleet::dra
