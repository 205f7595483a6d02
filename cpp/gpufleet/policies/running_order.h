// The queue order of running jobs at one scheduling point: (attained service, submit time,
// index), smallest first, read from the classes of running_classes.h without sorting them. A class
// is kept by its key c, which orders its jobs as their services do except between jobs whose
// services lie within rounding of each other (the service is computed from a job's counters, the
// key from the same numbers in another order); such runs of near-tied keys are read whole and
// sorted, so every comparison is the one the straightforward algorithm makes.
#ifndef GPUFLEET_POLICIES_RUNNING_ORDER_H_
#define GPUFLEET_POLICIES_RUNNING_ORDER_H_

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufleet/policies/running_classes.h"

namespace gpufleet::jobtime {

// Keys: double Service(int job, double now) const; double Submit(int job) const.
template <class Keys>
class RunningOrder {
 public:
  explicit RunningOrder(const Keys& keys) : keys_(keys) {}

  // a before b at `now`; b < 0 sorts last.
  bool Before(double now, int a, int b) const {
    if (b < 0) return true;
    return Before(keys_.Service(a, now), a, keys_.Service(b, now), b);
  }
  bool Before(double sa, int a, double sb, int b) const {
    if (sa != sb) return sa < sb;
    const double ta = keys_.Submit(a), tb = keys_.Submit(b);
    if (ta != tb) return ta < tb;
    return a < b;
  }

  // Keys of one class this close may belong to services in either order: far beyond the
  // rounding of either.
  static double NearTie(double c, double rate, double now) {
    return 1e-9 * (std::abs(c) + std::abs(now * rate)) + 1e-300;
  }

  // Reads a range of one class's set, forward (queue order) or reversed.
  template <class It>
  struct Cursor {
    It it, end;
    double rate = 0;
    std::vector<int> group;  // the current run of near-tied keys, in order
    size_t next = 0;
    double service = 0;  // of head()
    int head() const { return next < group.size() ? group[next] : -1; }
  };
  using Forward = Cursor<std::set<RunKey>::const_iterator>;
  using Backward = Cursor<std::set<RunKey>::const_reverse_iterator>;

  template <class It>
  void Start(Cursor<It>* c, It it, It end, double rate, double now) const {
    c->it = it;
    c->end = end;
    c->rate = rate;
    Refill(c, now);
  }
  template <class It>
  void Advance(Cursor<It>* c, double now) const {
    if (++c->next < c->group.size())
      c->service = keys_.Service(c->group[c->next], now);
    else
      Refill(c, now);
  }
  // Ends a cursor early.
  template <class It>
  static void Close(Cursor<It>* c) {
    c->group.clear();
    c->next = 0;
    c->it = c->end;
  }

  // Starts `cur` on `jobs` (a class's set, rate `rate`) at the first job at or after job x, whose
  // service is sx (strictly after with `after`). Keys further than a near tie below x's belong
  // to jobs before it, so the reading starts there.
  void Seek(Forward* cur, const std::set<RunKey>& jobs, double rate, double now, int x, double sx,
            bool after) const {
    const double c = sx - now * rate;
    Start(cur, jobs.lower_bound(RunKey::LeastWith(c - 2 * NearTie(c, rate, now))), jobs.end(), rate,
          now);
    while (cur->head() >= 0) {
      const int h = cur->head();
      const bool behind = after ? !Before(sx, x, cur->service, h) : Before(cur->service, h, sx, x);
      if (!behind) break;
      Advance(cur, now);
    }
  }

  // Visits the cursors' jobs in queue order (reversed for Backward cursors) until `visit`
  // returns false.
  template <class It, class Visit>
  void Merge(double now, std::vector<Cursor<It>>* cursors, Visit visit) const {
    while (true) {
      Cursor<It>* best = nullptr;
      for (Cursor<It>& c : *cursors) {
        if (c.head() < 0) continue;
        if (best == nullptr ||
            (kForward<It> ? Before(c.service, c.head(), best->service, best->head())
                          : Before(best->service, best->head(), c.service, c.head())))
          best = &c;
      }
      if (best == nullptr) return;
      const int i = best->head();
      Advance(best, now);
      if (!visit(i)) return;
    }
  }

  // The running jobs of queue q on `model`, last first, until `visit` returns false.
  template <class Visit>
  void Descending(const RunClasses& classes, double now, int q, int model, Visit visit) {
    backward_.clear();
    for (const RunClass& cl : classes.all())
      if (cl.model == model && !cl.run[q].empty()) {
        backward_.emplace_back();
        Start(&backward_.back(), cl.run[q].rbegin(), cl.run[q].rend(), cl.rate, now);
      }
    Merge(now, &backward_, visit);
  }

  // Every running job of queue q, in queue order.
  void Sorted(const RunClasses& classes, double now, int q, std::vector<int>* out) {
    scratch_.clear();
    for (const RunClass& cl : classes.all())
      for (const RunKey& k : cl.run[q]) scratch_.push_back({keys_.Service(k.job, now), k.job});
    std::sort(scratch_.begin(), scratch_.end(), [&](const auto& a, const auto& b) {
      return Before(a.first, a.second, b.first, b.second);
    });
    out->clear();
    for (const auto& [s, i] : scratch_) out->push_back(i);
  }

 private:
  template <class It>
  static constexpr bool kForward = std::is_same_v<It, std::set<RunKey>::const_iterator>;

  // Reads the next run of near-tied keys and sorts it.
  template <class It>
  void Refill(Cursor<It>* c, double now) const {
    c->group.clear();
    c->next = 0;
    if (c->it == c->end) return;
    double prev = c->it->c;
    c->group.push_back(c->it->job);
    for (++c->it; c->it != c->end && std::abs(c->it->c - prev) <= NearTie(prev, c->rate, now);
         ++c->it) {
      prev = c->it->c;
      c->group.push_back(c->it->job);
    }
    if (c->group.size() > 1)
      std::sort(c->group.begin(), c->group.end(), [&](int a, int b) {
        return kForward<It> ? Before(now, a, b) : Before(now, b, a);
      });
    c->service = keys_.Service(c->group[0], now);
  }

  const Keys& keys_;
  std::vector<Backward> backward_;
  std::vector<std::pair<double, int>> scratch_;
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_RUNNING_ORDER_H_
