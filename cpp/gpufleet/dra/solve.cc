#include "gpufleet/dra/solve.h"

#include "absl/strings/str_format.h"
#include "gpufleet/dra/search.h"
#include "gpufleet/dra/upstream_order.h"

namespace gpufleet::dra {
namespace {

absl::Status Slots(const Amounts& amounts, size_t size, const char* what, int owner) {
  for (const auto& [slot, amount] : amounts) {
    if (slot < 0 || static_cast<size_t>(slot) >= size)
      return absl::InvalidArgumentError(
          absl::StrFormat("dra problem: %s slot %d of #%d is out of range", what, slot, owner));
    if (amount < 0)
      return absl::InvalidArgumentError(
          absl::StrFormat("dra problem: %s amount of #%d is negative", what, owner));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProblem(const Problem& p) {
  const int devices = static_cast<int>(p.devices.size());
  if (p.num_claims < 0 || p.num_groups < 0 || p.budget < 0 || p.max_devices_per_claim < 0)
    return absl::InvalidArgumentError("dra problem: negative size");
  for (int d = 0; d < devices; ++d) {
    if (auto s = Slots(p.devices[d].counters, p.counter_free.size(), "counter", d); !s.ok()) return s;
    if (p.devices[d].unit >= static_cast<int>(p.unit_free.size()))
      return absl::InvalidArgumentError(absl::StrFormat("dra problem: unit of device #%d is out of range", d));
  }
  int last_group = -1;
  for (int r = 0; r < static_cast<int>(p.requests.size()); ++r) {
    const Request& q = p.requests[r];
    if (q.claim < 0 || q.claim >= p.num_claims || q.group < 0 || q.group >= p.num_groups ||
        q.group < last_group || q.group > last_group + 1 || q.count < 0)
      return absl::InvalidArgumentError(absl::StrFormat("dra problem: request #%d is malformed", r));
    last_group = q.group;
    for (const Candidate& c : q.candidates) {
      if (c.device < 0 || c.device >= devices)
        return absl::InvalidArgumentError(
            absl::StrFormat("dra problem: request #%d names device %d", r, c.device));
      if (auto s = Slots(c.capacity, p.capacity_free.size(), "capacity", r); !s.ok()) return s;
    }
  }
  if (last_group + 1 != p.num_groups)
    return absl::InvalidArgumentError("dra problem: a group has no request");
  // The searches recurse once per device chosen: bound what one question may ask for.
  int64_t asked = 0;
  for (const Request& q : p.requests)
    asked += q.mode == Mode::kAll ? static_cast<int64_t>(q.candidates.size()) : q.count;
  if (asked > kMaxDevicesPerQuestion)
    return absl::InvalidArgumentError(absl::StrFormat(
        "dra problem: the requests ask for %d devices, more than %d in one question", asked,
        kMaxDevicesPerQuestion));
  for (int k = 0; k < static_cast<int>(p.constraints.size()); ++k) {
    const Constraint& c = p.constraints[k];
    if (static_cast<int>(c.values.size()) != devices)
      return absl::InvalidArgumentError(
          absl::StrFormat("dra problem: constraint #%d has no value list per device", k));
    for (int r : c.requests)
      if (r < 0 || r >= static_cast<int>(p.requests.size()) || p.requests[r].claim != c.claim)
        return absl::InvalidArgumentError(
            absl::StrFormat("dra problem: constraint #%d names request %d", k, r));
    for (const auto& v : c.values)
      for (size_t i = 1; i < v.size(); ++i)
        if (v[i - 1] >= v[i])
          return absl::InvalidArgumentError(
              absl::StrFormat("dra problem: constraint #%d values are not sorted", k));
  }
  return absl::OkStatus();
}

Result Solve(const Problem& problem) {
  if (problem.objective == Objective::kFirst) {
    Result first = UpstreamOrderSearch(problem);
    if (first.verdict == Verdict::kAllocated) first.score = ScoreOf(problem, first.choices);
    return first;
  }
  Result first;
  const bool order = OrderMatters(problem);
  if (order) {
    first = UpstreamOrderSearch(problem);
    if (first.verdict != Verdict::kAllocated) return first;
  }
  Result best = ScoredSearch(problem);
  if (best.verdict == Verdict::kAllocated || !order) {
    best.steps += first.steps;
    return best;
  }
  first.steps += best.steps;  // the scored search gave up; the allocator's own answer stands
  first.score = ScoreOf(problem, first.choices);
  return first;
}

}  // namespace gpufleet::dra
