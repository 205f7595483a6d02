#include "gpufleet/dra/bound.h"

#include <algorithm>

namespace gpufleet::dra {
namespace {

// At most this many values of one open matchAttribute constraint are tried one by one; past it
// the bound only asks for devices that have the attribute (still a valid bound).
constexpr int kMaxPinnedValues = 64;

bool Contains(const std::vector<int>& sorted, int v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

}  // namespace

DemandBound::DemandBound(const Problem& problem)
    : problem_(problem), device_slot_(problem.devices.size(), -1) {}

bool DemandBound::Fits(const SearchState& state, const std::vector<Need>& needs) {
  if (!FitsWith(state, needs, -1, 0)) return false;
  // Open matchAttribute constraints: some single value must serve all their requests.
  for (int k = 0; k < static_cast<int>(problem_.constraints.size()); ++k) {
    const Constraint& con = problem_.constraints[k];
    if (con.distinct || !state.ConstraintOpen(k)) continue;
    std::vector<int> values;
    bool covers = false;
    for (const Need& n : needs) {
      if (std::find(con.requests.begin(), con.requests.end(), n.request) == con.requests.end())
        continue;
      covers = true;
      for (const Candidate& c : problem_.requests[n.request].candidates)
        for (int v : con.values[c.device]) values.push_back(v);
    }
    if (!covers) continue;
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    if (values.empty()) return false;
    if (static_cast<int>(values.size()) > kMaxPinnedValues) continue;
    bool any = false;
    for (int v : values)
      if (FitsWith(state, needs, k, v)) {
        any = true;
        break;
      }
    if (!any) return false;
  }
  return true;
}

bool DemandBound::FitsWith(const SearchState& state, const std::vector<Need>& needs,
                           int pinned_constraint, int pinned_value) {
  slot_devices_.clear();
  std::fill(device_slot_.begin(), device_slot_.end(), -1);
  std::vector<uint8_t> reserved(problem_.devices.size(), 0);  // held by pending All requests
  auto allowed = [&](int r, int c) {
    const Candidate& cand = problem_.requests[r].candidates[c];
    if (!state.Available(r, c)) return false;
    for (int k : state.ConstraintsOf(r)) {
      if (!state.ConstraintAccepts(k, cand.device)) return false;
      if (k == pinned_constraint && !Contains(problem_.constraints[k].values[cand.device], pinned_value))
        return false;
    }
    return true;
  };
  // All-mode requests need exactly their remaining candidates.
  for (const Need& n : needs) {
    const Request& req = problem_.requests[n.request];
    if (req.mode != Mode::kAll || n.remaining == 0) continue;
    for (int c = n.from; c < static_cast<int>(req.candidates.size()); ++c) {
      if (!allowed(n.request, c)) return false;
      const int d = req.candidates[c].device;
      if (!problem_.devices[d].multi && !req.admin) {
        if (reserved[d]) return false;
        reserved[d] = 1;
      }
    }
  }
  for (const Need& n : needs) {
    const Request& req = problem_.requests[n.request];
    if (req.mode == Mode::kAll || n.remaining == 0) continue;
    std::vector<int> exclusive;
    int shared = 0;
    for (int c = n.from; c < static_cast<int>(req.candidates.size()); ++c) {
      if (!allowed(n.request, c)) continue;
      const int d = req.candidates[c].device;
      if (problem_.devices[d].multi) {
        ++shared;
      } else if (req.admin || !reserved[d]) {
        exclusive.push_back(d);
      }
    }
    if (shared > 0) continue;  // a shared device may serve the whole request (capacity permitting)
    if (static_cast<int>(exclusive.size()) < n.remaining) return false;
    if (req.admin) continue;  // admin access does not take devices from others
    for (int i = 0; i < n.remaining; ++i) slot_devices_.push_back(exclusive);
  }
  // Every slot needs a device of its own.
  slot_device_.assign(slot_devices_.size(), -1);
  seen_.assign(problem_.devices.size(), -1);
  for (int s = 0; s < static_cast<int>(slot_devices_.size()); ++s)
    if (!Augment(s, seen_, s)) return false;
  return true;
}

bool DemandBound::Augment(int slot, std::vector<int>& seen, int stamp) {
  for (int d : slot_devices_[slot]) {
    if (seen[d] == stamp) continue;
    seen[d] = stamp;
    if (device_slot_[d] < 0 || Augment(device_slot_[d], seen, stamp)) {
      device_slot_[d] = slot;
      slot_device_[slot] = d;
      return true;
    }
  }
  return false;
}

}  // namespace gpufleet::dra
