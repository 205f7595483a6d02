#include "gpufleet/dra/upstream_order.h"

#include <vector>

#include "gpufleet/dra/bound.h"
#include "gpufleet/dra/search_state.h"

namespace gpufleet::dra {
namespace {

enum class Outcome { kFound, kNone, kError, kBudget };

class OrderedSearch {
 public:
  explicit OrderedSearch(const Problem& p) : p_(p), state_(p), bound_(p) {
    members_.resize(p.num_groups);
    for (int r = 0; r < static_cast<int>(p.requests.size()); ++r)
      members_[p.requests[r].group].push_back(r);
    claim_devices_.assign(p.num_claims, 0);
    // risky_from_[g]: some group at or after g holds an All request under a constraint.
    risky_from_.assign(p.num_groups + 1, 0);
    for (int g = p.num_groups - 1; g >= 0; --g) {
      bool risky = false;
      for (int r : members_[g])
        risky |= p.requests[r].mode == Mode::kAll && !state_.ConstraintsOf(r).empty();
      risky_from_[g] = risky || risky_from_[g + 1];
    }
  }

  Result Run() {
    Result out;
    const Outcome o = Group(0);
    out.steps = steps_;
    switch (o) {
      case Outcome::kFound:
        out.verdict = Verdict::kAllocated;
        out.choices = choices_;
        break;
      case Outcome::kNone:
        out.verdict = Verdict::kUnallocatable;
        out.reason = "cannot allocate all claims";
        break;
      case Outcome::kError:
        out.verdict = Verdict::kError;
        out.error_request = error_request_;
        out.error_device = error_device_;
        break;
      case Outcome::kBudget:
        out.verdict = Verdict::kUnallocatable;
        out.gave_up = true;
        out.reason = "gave up after " + std::to_string(steps_) + " search steps";
        break;
    }
    return out;
  }

 private:
  Outcome Group(int g) {
    if (g == p_.num_groups) return Outcome::kFound;
    for (int r : members_[g]) {
      const Outcome o = Slot(g, r, 0);
      if (o != Outcome::kNone) return o;
    }
    return Outcome::kNone;
  }

  // Device slot `i` of request `r` (member of group `g`).
  Outcome Slot(int g, int r, int i) {
    if (++steps_ > p_.budget) return Outcome::kBudget;
    const Request& req = p_.requests[r];
    const int count = req.mode == Mode::kAll ? static_cast<int>(req.candidates.size()) : req.count;
    if (req.mode == Mode::kAll && count == 0) return Outcome::kNone;
    if (i >= count) return Group(g + 1);
    if (claim_devices_[req.claim] + count - i > p_.max_devices_per_claim) return Outcome::kNone;
    if (i == 0 && !risky_from_[g] && !RestFits(g, r)) return Outcome::kNone;
    if (req.mode == Mode::kAll) {
      const AddResult added = state_.TryAdd(r, i);
      if (added == AddResult::kConstraint) {
        error_request_ = r;
        error_device_ = req.candidates[i].device;
        return Outcome::kError;
      }
      if (added != AddResult::kOk) return Outcome::kNone;
      return Descend(g, r, i, i);
    }
    // Within a request: every order of the devices, or each set once (after the last one taken).
    const int from = (p_.combinations && i > 0) ? choices_.back().candidate + 1 : 0;
    for (int c = from; c < static_cast<int>(req.candidates.size()); ++c) {
      if (state_.TryAdd(r, c) != AddResult::kOk) continue;
      const Outcome o = Descend(g, r, i, c);
      if (o != Outcome::kNone) return o;
    }
    return Outcome::kNone;
  }

  Outcome Descend(int g, int r, int i, int c) {
    const Request& req = p_.requests[r];
    choices_.push_back({r, req.candidates[c].device, c});
    ++claim_devices_[req.claim];
    const Outcome o = Slot(g, r, i + 1);
    if (o == Outcome::kFound) return o;
    --claim_devices_[req.claim];
    choices_.pop_back();
    state_.Remove(r, c);
    return o;
  }

  // The counting bound for request r (starting) and the first member of every later group.
  bool RestFits(int g, int r) {
    needs_.clear();
    auto need = [&](int q) {
      const Request& req = p_.requests[q];
      needs_.push_back({q, req.mode == Mode::kAll ? static_cast<int>(req.candidates.size()) : req.count, 0});
    };
    need(r);
    for (int h = g + 1; h < p_.num_groups; ++h)
      if (members_[h].size() == 1) need(members_[h][0]);  // alternatives: any one may do
    return bound_.Fits(state_, needs_);
  }

  const Problem& p_;
  SearchState state_;
  DemandBound bound_;
  std::vector<std::vector<int>> members_;
  std::vector<uint8_t> risky_from_;
  std::vector<int> claim_devices_;
  std::vector<Choice> choices_;
  std::vector<Need> needs_;
  int64_t steps_ = 0;
  int error_request_ = -1;
  int error_device_ = -1;
};

}  // namespace

bool OrderMatters(const Problem& problem) {
  std::vector<uint8_t> constrained(problem.requests.size(), 0);
  for (const Constraint& c : problem.constraints)
    for (int r : c.requests) constrained[r] = 1;
  for (int r = 0; r < static_cast<int>(problem.requests.size()); ++r)
    if (problem.requests[r].mode == Mode::kAll && constrained[r]) return true;
  return false;
}

Result UpstreamOrderSearch(const Problem& problem) { return OrderedSearch(problem).Run(); }

}  // namespace gpufleet::dra
