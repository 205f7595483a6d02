#include "gpufleet/dra/prepared.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "gpufleet/dra/solve.h"

namespace gpufleet::dra {
namespace {

constexpr int64_t kPpm = 1000000;

// free * 1e6 / total, rounded down as Python's // rounds (quantities in milli-units reach 1e14,
// so the product needs 128 bits).
int64_t PerMillion(int64_t free, int64_t total) {
  const __int128 num = static_cast<__int128>(free) * kPpm;
  const __int128 den = total > 0 ? total : 1;
  __int128 q = num / den;
  if ((num % den != 0) && ((num < 0) != (den < 0))) --q;
  return static_cast<int64_t>(q);
}

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError("dra table: " + what);
}

}  // namespace

absl::Status ValidateTable(const NodeTable& t) {
  const int devices = static_cast<int>(t.devices.size());
  const int units = static_cast<int>(t.unit_device.size());
  if (t.unit_counters.size() != t.unit_device.size())
    return Bad("unit_counters and unit_device differ in length");
  if (t.capacity_device.size() != t.capacity_total.size())
    return Bad("capacity_device and capacity_total differ in length");
  for (int d = 0; d < devices; ++d) {
    const Device& dev = t.devices[d];
    if (dev.unit < -1 || dev.unit >= units)
      return Bad(absl::StrFormat("unit of device #%d is out of range", d));
    for (const auto& [slot, amount] : dev.counters)
      if (slot < 0 || slot >= static_cast<int>(t.counter_total.size()) || amount < 0)
        return Bad(absl::StrFormat("counter of device #%d is out of range", d));
  }
  for (int c : t.capacity_device)
    if (c < 0 || c >= devices) return Bad("a capacity slot names no device");
  for (int u = 0; u < units; ++u) {
    if (t.unit_device[u] < -1 || t.unit_device[u] >= devices)
      return Bad(absl::StrFormat("unit #%d names no device", u));
    for (int s : t.unit_counters[u])
      if (s < 0 || s >= static_cast<int>(t.counter_total.size()))
        return Bad(absl::StrFormat("unit #%d names no counter", u));
  }
  return absl::OkStatus();
}

Held EmptyHeld(const NodeTable& t) {
  Held h;
  h.in_use.assign(t.devices.size(), 0);
  h.sharers.assign(t.devices.size(), 0);
  h.capacity_used.assign(t.capacity_total.size(), 0);
  h.counter_used.assign(t.counter_total.size(), 0);
  return h;
}

absl::Status ValidateHeld(const NodeTable& t, const Held& h) {
  if (h.in_use.size() != t.devices.size() || h.sharers.size() != t.devices.size() ||
      h.capacity_used.size() != t.capacity_total.size() ||
      h.counter_used.size() != t.counter_total.size())
    return Bad("what is held does not match the node's devices, capacities and counters");
  return absl::OkStatus();
}

absl::Status ValidateRequests(const NodeTable& t, const ClaimRequests& r) {
  if (r.twin_signature.size() != t.devices.size())
    return Bad("the requests' twin signatures do not match the node's devices");
  return ValidateProblem(BuildProblem(t, r, EmptyHeld(t), Objective::kPack, 0));
}

Problem BuildProblem(const NodeTable& t, const ClaimRequests& r, const Held& h,
                     Objective objective, int64_t budget) {
  Problem p;
  const int n = static_cast<int>(t.devices.size());
  p.devices = t.devices;
  p.counter_free = t.counter_total;
  for (size_t s = 0; s < p.counter_free.size(); ++s) p.counter_free[s] -= h.counter_used[s];
  absl::flat_hash_map<int64_t, int> twins;
  for (int d = 0; d < n; ++d) {
    Device& dev = p.devices[d];
    if (h.in_use[d]) {
      dev.in_use = !dev.multi;
      for (const auto& [slot, amount] : dev.counters) p.counter_free[slot] -= amount;
    }
  }
  for (int d = 0; d < n; ++d) {  // after in_use is known: twins are both free or both held
    Device& dev = p.devices[d];
    const int sig = r.twin_signature[d];
    dev.twin = sig < 0 ? -1
                       : twins.try_emplace(int64_t{sig} * 2 + dev.in_use, static_cast<int>(twins.size()))
                             .first->second;
  }
  p.capacity_free = t.capacity_total;
  for (size_t s = 0; s < p.capacity_free.size(); ++s) p.capacity_free[s] -= h.capacity_used[s];
  const size_t units = t.unit_device.size();
  p.unit_free.assign(units, kPpm);
  p.unit_opened.assign(units, 0);
  for (size_t u = 0; u < units; ++u) {
    const int d = t.unit_device[u];
    if (d < 0) {
      int64_t free = 0;
      bool opened = false;
      for (int s : t.unit_counters[u]) {
        free += PerMillion(p.counter_free[s], t.counter_total[s]);
        opened = opened || p.counter_free[s] < t.counter_total[s];
      }
      p.unit_free[u] = free;
      p.unit_opened[u] = opened;
    } else if (t.devices[d].multi) {
      int64_t free = 0;
      for (size_t s = 0; s < t.capacity_device.size(); ++s)
        if (t.capacity_device[s] == d) free += PerMillion(p.capacity_free[s], t.capacity_total[s]);
      p.unit_free[u] = free;
      p.unit_opened[u] = h.sharers[d] > 0;
    }
  }
  p.requests = r.requests;
  p.num_claims = r.num_claims;
  p.num_groups = r.num_groups;
  p.constraints = r.constraints;
  p.objective = objective;
  p.locality = objective == Objective::kPack;
  p.budget = budget;
  p.combinations = r.combinations;
  return p;
}

void HoldChoices(const NodeTable& t, const ClaimRequests& r, const std::vector<Choice>& choices,
                 int sign, Held& h) {
  for (const Choice& c : choices) {
    const Request& req = r.requests[c.request];
    if (req.admin) continue;
    const Candidate& cand = req.candidates[c.candidate];
    if (t.devices[c.device].multi) {
      h.sharers[c.device] += sign;
      for (const auto& [slot, amount] : cand.capacity) h.capacity_used[slot] += sign * amount;
    } else {
      h.in_use[c.device] = sign > 0;
    }
  }
}

}  // namespace gpufleet::dra
