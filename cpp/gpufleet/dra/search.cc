#include "gpufleet/dra/search.h"

#include <algorithm>
#include <vector>

#include "gpufleet/dra/bound.h"
#include "gpufleet/dra/search_state.h"

namespace gpufleet::dra {

bool Score::operator<(const Score& o) const {
  if (roots != o.roots) return roots < o.roots;
  if (opened != o.opened) return opened < o.opened;
  return leftover < o.leftover;
}

namespace {

// Running score terms of a partial allocation.
class ScoreKeeper {
 public:
  explicit ScoreKeeper(const Problem& p) : p_(p) {
    int max_root = -1, max_unit = -1;
    for (const Device& d : p.devices) {
      max_root = std::max(max_root, d.root);
      max_unit = std::max(max_unit, d.unit);
    }
    root_count_.assign(p.num_claims, std::vector<int>(max_root + 1, 0));
    unit_taken_.assign(max_unit + 1, 0);
    unit_touch_.assign(max_unit + 1, 0);
  }
  void Add(int r, int c) { Apply(r, c, +1); }
  void Remove(int r, int c) { Apply(r, c, -1); }
  Score Partial() const { return {p_.locality ? roots_ : 0, opened_, 0}; }
  // The partial score after also taking candidate c of request r, with what its unit keeps free
  // as the last term (a greedy order: fewer new roots, fewer new units, fuller units first).
  Score After(int r, int c) const {
    const Request& req = p_.requests[r];
    const Candidate& cand = req.candidates[c];
    const Device& d = p_.devices[cand.device];
    Score s = Partial();
    if (p_.locality && d.root >= 0 && root_count_[req.claim][d.root] == 0) ++s.roots;
    if (d.unit >= 0) {
      if (unit_touch_[d.unit] == 0 && !UnitOpened(d.unit)) ++s.opened;
      s.leftover = UnitFree(d.unit) - unit_taken_[d.unit] - Take(cand, d.unit);
    }
    return s;
  }
  Score Full() const {
    Score s = Partial();
    for (int u = 0; u < static_cast<int>(unit_touch_.size()); ++u)
      if (unit_touch_[u] > 0) s.leftover += UnitFree(u) - unit_taken_[u];
    return s;
  }

 private:
  int64_t UnitFree(int u) const {
    return u < static_cast<int>(p_.unit_free.size()) ? p_.unit_free[u] : 0;
  }
  int64_t Take(const Candidate& cand, int u) const {
    return cand.unit_take < 0 ? UnitFree(u) : cand.unit_take;
  }
  bool UnitOpened(int u) const {
    return u < static_cast<int>(p_.unit_opened.size()) && p_.unit_opened[u];
  }
  void Apply(int r, int c, int sign) {
    const Request& req = p_.requests[r];
    const Candidate& cand = req.candidates[c];
    const Device& d = p_.devices[cand.device];
    if (d.root >= 0) {
      int& n = root_count_[req.claim][d.root];
      if (sign > 0 && n++ == 0) ++roots_;
      if (sign < 0 && --n == 0) --roots_;
    }
    if (d.unit >= 0) {
      unit_taken_[d.unit] += sign * Take(cand, d.unit);
      int& t = unit_touch_[d.unit];
      if (sign > 0 && t++ == 0 && !UnitOpened(d.unit)) ++opened_;
      if (sign < 0 && --t == 0 && !UnitOpened(d.unit)) --opened_;
    }
  }

  const Problem& p_;
  std::vector<std::vector<int>> root_count_;
  std::vector<int64_t> unit_taken_;
  std::vector<int> unit_touch_;
  int roots_ = 0;
  int opened_ = 0;
};

class Scored {
 public:
  explicit Scored(const Problem& p) : p_(p), state_(p), bound_(p), keeper_(p) {
    members_.resize(p.num_groups);
    for (int r = 0; r < static_cast<int>(p.requests.size()); ++r)
      members_[p.requests[r].group].push_back(r);
    claim_devices_.assign(p.num_claims, 0);
  }

  Result Run() {
    Result out;
    std::vector<int> pick(p_.num_groups, 0);  // member per group, an odometer in priority order
    for (;;) {
      chosen_.clear();
      for (int g = 0; g < p_.num_groups; ++g) chosen_.push_back(members_[g][pick[g]]);
      if (RootFits()) {
        Dfs(0, 0, 0);
        if (found_ || steps_ > p_.budget) break;
      }
      int g = p_.num_groups - 1;
      while (g >= 0 && ++pick[g] == static_cast<int>(members_[g].size())) pick[g--] = 0;
      if (g < 0) break;
    }
    out.steps = steps_;
    out.gave_up = steps_ > p_.budget;
    if (found_) {
      out.verdict = Verdict::kAllocated;
      out.choices = best_choices_;
      out.score = best_;
      out.proved_best = !out.gave_up;
    } else {
      out.verdict = Verdict::kUnallocatable;
      out.reason = out.gave_up ? "gave up after " + std::to_string(steps_) + " search steps"
                               : "cannot allocate all claims";
    }
    return out;
  }

 private:
  int Count(int r) const {
    const Request& req = p_.requests[r];
    return req.mode == Mode::kAll ? static_cast<int>(req.candidates.size()) : req.count;
  }

  bool RootFits() {
    needs_.clear();
    std::vector<int> per_claim(p_.num_claims, 0);
    for (int r : chosen_) {
      const Request& req = p_.requests[r];
      if (req.mode == Mode::kAll && req.candidates.empty()) return false;
      per_claim[req.claim] += Count(r);
      needs_.push_back({r, Count(r), 0});
    }
    for (int n : per_claim)
      if (n > p_.max_devices_per_claim) return false;
    return bound_.Fits(state_, needs_);
  }

  // The needs from position `pos` on, with `taken` devices of chosen_[pos] already chosen and its
  // next device at candidate `from` or later.
  bool RestFits(int pos, int taken, int from) {
    needs_.clear();
    for (int i = pos; i < static_cast<int>(chosen_.size()); ++i) {
      const int r = chosen_[i];
      if (i == pos) needs_.push_back({r, Count(r) - taken, from});
      else needs_.push_back({r, Count(r), 0});
    }
    return bound_.Fits(state_, needs_);
  }

  void Dfs(int pos, int taken, int from) {
    if (found_ && p_.objective == Objective::kFirst) return;
    if (++steps_ > p_.budget) return;
    if (found_ && best_ < keeper_.Partial()) return;
    if (pos == static_cast<int>(chosen_.size())) {
      const Score s = keeper_.Full();
      if (!found_ || s < best_) {
        found_ = true;
        best_ = s;
        best_choices_ = choices_;
      }
      return;
    }
    const int r = chosen_[pos];
    const Request& req = p_.requests[r];
    const int count = Count(r);
    if (taken == count) {
      Dfs(pos + 1, 0, 0);
      return;
    }
    if (!RestFits(pos, taken, from)) return;
    if (req.mode == Mode::kAll) {
      if (state_.TryAdd(r, taken) != AddResult::kOk) return;
      Take(pos, r, taken, taken + 1, taken + 1);
      return;
    }
    // Choose the next device of the set; one of each group of twins at this level. With a score
    // to keep, the likely best come first (a good allocation early cuts more branches).
    std::vector<std::pair<Score, int>> order;
    for (int c = from; c < static_cast<int>(req.candidates.size()); ++c)
      if (state_.Available(r, c)) order.push_back({p_.objective == Objective::kPack ? keeper_.After(r, c) : Score{}, c});
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<int> tried_twins;
    for (const auto& [unused, c] : order) {
      const int twin = p_.devices[req.candidates[c].device].twin;
      if (twin >= 0 && std::find(tried_twins.begin(), tried_twins.end(), twin) != tried_twins.end())
        continue;
      if (state_.TryAdd(r, c) != AddResult::kOk) continue;
      if (twin >= 0) tried_twins.push_back(twin);
      // A request takes a device once (a shared one too, as Kubernetes' allocator does).
      Take(pos, r, c, taken + 1, c + 1);
      if (steps_ > p_.budget || (found_ && p_.objective == Objective::kFirst)) return;
    }
  }

  void Take(int pos, int r, int c, int taken, int next) {
    choices_.push_back({r, p_.requests[r].candidates[c].device, c});
    keeper_.Add(r, c);
    Dfs(pos, taken, next);
    keeper_.Remove(r, c);
    choices_.pop_back();
    state_.Remove(r, c);
  }

  const Problem& p_;
  SearchState state_;
  DemandBound bound_;
  ScoreKeeper keeper_;
  std::vector<std::vector<int>> members_;
  std::vector<int> chosen_;
  std::vector<int> claim_devices_;
  std::vector<Choice> choices_;
  std::vector<Choice> best_choices_;
  std::vector<Need> needs_;
  Score best_;
  bool found_ = false;
  int64_t steps_ = 0;
};

}  // namespace

Result ScoredSearch(const Problem& problem) { return Scored(problem).Run(); }

Score ScoreOf(const Problem& problem, const std::vector<Choice>& choices) {
  ScoreKeeper keeper(problem);
  for (const Choice& ch : choices) keeper.Add(ch.request, ch.candidate);
  return keeper.Full();
}

}  // namespace gpufleet::dra
