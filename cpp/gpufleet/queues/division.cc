#include "gpufleet/queues/division.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gpufleet::queues {
namespace {

// What a queue may still be given: its request (capped by its limit) less what it has.
double KaiRemainingRequest(const KaiEntry& e) {
  return std::max(0.0, std::min(e.request, e.limit) - e.fair_share);
}

bool KaiSatisfied(const KaiEntry& e) {
  return e.request <= e.fair_share || (!std::isinf(e.limit) && e.limit <= e.fair_share);
}

// Rounds of one priority level; returns what remains and marks entries left with a fraction.
double KaiDivideLevel(double remaining, double k, std::vector<KaiEntry>& e,
                   const std::vector<int>& level, std::vector<double>& fraction) {
  while (true) {
    double total_weight = 0;
    for (int i : level)
      if (KaiRemainingRequest(e[i]) > 0) total_weight += e[i].weight;
    if (total_weight <= 0) break;
    // Share weights: the normalized weight, moved away from past usage by k (never below 0).
    double sum = 0;
    std::vector<double> share(level.size(), 0.0);
    for (size_t j = 0; j < level.size(); ++j) {
      const KaiEntry& x = e[level[j]];
      if (KaiSatisfied(x)) continue;
      const double nw = x.weight / total_weight;
      share[j] = std::max(0.0, nw + k * (nw - x.usage));
      sum += share[j];
    }
    if (sum <= 0) break;
    const double round_amount = remaining;
    bool again = false;
    for (size_t j = 0; j < level.size(); ++j) {
      if (remaining <= 0) break;
      KaiEntry& x = e[level[j]];
      if (KaiSatisfied(x) || x.weight <= 0) continue;
      const double requested = KaiRemainingRequest(x);
      const double portion = round_amount * share[j] / sum;
      double give = 0;
      if (requested <= portion) {
        give = requested;
        fraction[level[j]] = -1;
      } else {
        // Shares are limited in whole units; the fraction waits for the leftover step.
        give = std::floor(portion);
        if (portion - give > 0) fraction[level[j]] = portion - give;
      }
      if (give <= 0) continue;
      x.fair_share += give;
      remaining -= give;
      again = again || requested < portion;
    }
    if (!again || remaining <= 0) break;
  }
  // Rounding leftovers: one unit each, largest fraction first, older queue on ties.
  std::vector<int> waiting;
  for (int i : level)
    if (fraction[i] > 0) waiting.push_back(i);
  std::sort(waiting.begin(), waiting.end(), [&](int a, int b) {
    if (fraction[a] != fraction[b]) return fraction[a] > fraction[b];
    return e[a].order < e[b].order;
  });
  for (int i : waiting) {
    if (remaining <= 0) break;
    const double give = std::min({1.0, remaining, KaiRemainingRequest(e[i])});
    if (give <= 0) continue;
    e[i].fair_share += give;
    remaining -= give;
  }
  return remaining;
}

}  // namespace

std::vector<std::string> DivisionPolicyNames() { return {"capacity", "drs", "kai"}; }

const char* DivisionPolicyName(DivisionPolicy p) {
  switch (p) {
    case DivisionPolicy::kKai: return "kai";
    case DivisionPolicy::kDrs: return "drs";
    case DivisionPolicy::kCapacity: return "capacity";
  }
  return "kai";
}

absl::StatusOr<DivisionPolicy> ParseDivisionPolicy(const std::string& name) {
  if (name == "kai") return DivisionPolicy::kKai;
  if (name == "drs") return DivisionPolicy::kDrs;
  if (name == "capacity") return DivisionPolicy::kCapacity;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown fair-share policy \"%s\"; known: %s", name,
      absl::StrJoin(DivisionPolicyNames(), ", ")));
}

double KaiDivideOverQuota(double total, double k, std::vector<KaiEntry>& e) {
  std::vector<int> order(e.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (e[a].priority != e[b].priority) return e[a].priority > e[b].priority;
    return e[a].order < e[b].order;
  });
  std::vector<double> fraction(e.size(), -1);
  double remaining = total;
  for (size_t i = 0; i < order.size() && remaining > 0;) {
    std::vector<int> level;
    const int p = e[order[i]].priority;
    while (i < order.size() && e[order[i]].priority == p) level.push_back(order[i++]);
    remaining = KaiDivideLevel(remaining, k, e, level, fraction);
  }
  return std::max(0.0, remaining);
}

double KaiDivide(double total, double k, std::vector<KaiEntry>& e) {
  double remaining = total;
  for (KaiEntry& x : e) {
    const double deserved = std::isinf(x.deserved) ? total : x.deserved;
    const double give = std::max(0.0, std::min(deserved, std::min(x.request, x.limit)));
    x.fair_share += give;
    remaining -= give;
  }
  if (remaining <= 0) return 0;
  return KaiDivideOverQuota(remaining, k, e);
}

void WaterFill(double total, absl::Span<const double> weights, absl::Span<const double> caps,
               std::vector<double>* out) {
  const size_t n = weights.size();
  out->assign(n, 0.0);
  double left = total > 0 ? total : 0;
  auto fill = [&](const std::vector<size_t>& ids, auto weight_of) {
    std::vector<size_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
      return caps[a] / weight_of(a) < caps[b] / weight_of(b);
    });
    double weight_sum = 0;
    for (size_t i : sorted) weight_sum += weight_of(i);
    for (size_t i : sorted) {
      if (left <= 0 || weight_sum <= 0) break;
      const double level = left / weight_sum;
      const double cap = std::max(0.0, caps[i]);
      const double give = std::min(cap, level * weight_of(i));
      (*out)[i] = give;
      left -= give;
      weight_sum -= weight_of(i);
    }
  };
  std::vector<size_t> weighted, unweighted;
  for (size_t i = 0; i < n; ++i) (weights[i] > 0 ? weighted : unweighted).push_back(i);
  fill(weighted, [&](size_t i) { return weights[i]; });
  fill(unweighted, [](size_t) { return 1.0; });
  if (left < 0) left = 0;
}

void ShareDivider::Divide(DivisionPolicy policy, const DivisionInput& in,
                          std::vector<double>* fs) {
  fs->assign(static_cast<size_t>(in.tree->size()) * in.tree->num_resources(), 0.0);
  if (policy == DivisionPolicy::kKai)
    DivideKai(in, fs);
  else
    DivideQuotaFirst(policy, in, fs);
}

void ShareDivider::DivideKai(const DivisionInput& in, std::vector<double>* fs) {
  const QueueTree& t = *in.tree;
  const int R = t.num_resources();
  auto divide = [&](const std::vector<int>& group, double total, int r) {
    entries_.resize(group.size());
    for (size_t j = 0; j < group.size(); ++j) {
      const int q = group[j];
      KaiEntry& x = entries_[j];
      x.deserved = t.quota(q, r);
      x.request = in.request[q * R + r];
      x.limit = t.limit(q, r);
      x.weight = t.over_quota_weight(q, r);
      x.usage = in.usage.empty() ? 0 : in.usage[q * R + r];
      x.priority = t.priority(q);
      x.order = static_cast<int>(j);  // siblings are sorted older first
      x.fair_share = 0;
    }
    KaiDivide(total, in.k_value, entries_);
    for (size_t j = 0; j < group.size(); ++j) (*fs)[group[j] * R + r] = entries_[j].fair_share;
  };
  for (int r = 0; r < R; ++r) {
    divide(t.roots(), in.capacity[r], r);
    for (int q : t.top_down())
      if (!t.leaf(q)) divide(t.children(q), (*fs)[q * R + r], r);
  }
}

void ShareDivider::DivideQuotaFirst(DivisionPolicy policy, const DivisionInput& in,
                                    std::vector<double>* fs) {
  const QueueTree& t = *in.tree;
  const int R = t.num_resources();
  const int n = t.size();
  const bool drs = policy == DivisionPolicy::kDrs;
  // Kueue's subtree quota: a queue's nominal quota plus what its children lend it.
  subtree_quota_.assign(static_cast<size_t>(n) * R, 0.0);
  guaranteed_.assign(static_cast<size_t>(n) * R, 0.0);
  const std::vector<int>& order = t.top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int q = *it;
    for (int r = 0; r < R; ++r) {
      double sq = t.quota(q, r);
      for (int c : t.children(q)) sq += subtree_quota_[c * R + r] - guaranteed_[c * R + r];
      subtree_quota_[q * R + r] = sq;
      const double lend = t.lending_limit(q, r);
      guaranteed_[q * R + r] = std::isinf(lend) ? 0.0 : std::max(0.0, sq - lend);
    }
  }
  auto divide = [&](const std::vector<int>& group, double total, int r) {
    const size_t m = group.size();
    weights_.resize(m);
    caps_.resize(m);
    firsts_.resize(m);
    double given = 0;
    for (size_t j = 0; j < m; ++j) {
      const int q = group[j];
      const int i = q * R + r;
      const double own = drs ? subtree_quota_[i] : t.quota(q, r);
      double cap = std::min(in.request[i], t.limit(q, r));
      if (drs) cap = std::min(cap, own + t.borrowing_limit(q, r));
      firsts_[j] = std::max(0.0, std::min(own, cap));
      caps_[j] = std::max(0.0, cap - firsts_[j]);
      weights_[j] = drs ? t.weight(q) : t.over_quota_weight(q, r);
      given += firsts_[j];
    }
    const double left = total - given;
    if (left > 0) {
      WaterFill(left, weights_, caps_, &extra_);
    } else {
      extra_.assign(m, 0.0);
    }
    for (size_t j = 0; j < m; ++j) (*fs)[group[j] * R + r] = firsts_[j] + extra_[j];
  };
  for (int r = 0; r < R; ++r) {
    if (drs && !t.configured(r)) {
      // Kueue divides only the resources its queues name; the others are not limited.
      for (int q = 0; q < n; ++q) (*fs)[q * R + r] = kUnlimited;
      continue;
    }
    if (drs) {
      // Every top queue (a root cohort, or a queue without one) shares only its own quota.
      for (int q : t.roots())
        (*fs)[q * R + r] = std::max(
            0.0, std::min({in.capacity[r], subtree_quota_[q * R + r], in.request[q * R + r],
                           t.limit(q, r)}));
    } else {
      divide(t.roots(), in.capacity[r], r);
    }
    for (int q : order)
      if (!t.leaf(q)) divide(t.children(q), (*fs)[q * R + r], r);
  }
}

}  // namespace gpufleet::queues
