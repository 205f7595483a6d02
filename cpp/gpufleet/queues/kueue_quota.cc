#include "gpufleet/queues/kueue_quota.h"

#include <algorithm>
#include <cmath>

namespace gpufleet::queues {

KueueQuota::KueueQuota(const QueueTree& tree) : tree_(tree), R_(tree.num_resources()) {
  const size_t n = static_cast<size_t>(tree.size()) * R_;
  subtree_quota_.assign(n, 0.0);
  guaranteed_.assign(n, 0.0);
  usage_.assign(n, 0.0);
  lendable_.assign(n, 0.0);
  const std::vector<int>& order = tree.top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int q = *it;
    for (int r = 0; r < R_; ++r) {
      double sq = tree.quota(q, r);
      for (int c : tree.children(q)) sq += subtree_quota_[c * R_ + r] - guaranteed_[c * R_ + r];
      subtree_quota_[q * R_ + r] = sq;
      const double lend = tree.lending_limit(q, r);
      guaranteed_[q * R_ + r] = std::isinf(lend) ? 0.0 : std::max(0.0, sq - lend);
    }
  }
}

void KueueQuota::AddUsage(int q, int r, double amount) {
  while (q >= 0 && amount != 0) {
    const int i = q * R_ + r;
    const double before = usage_[i];
    usage_[i] += amount;
    // Only the part beyond the guaranteed quota is taken from (or given back to) the cohort.
    const double g = guaranteed_[i];
    const double delta = std::max(0.0, usage_[i] - g) - std::max(0.0, before - g);
    q = tree_.parent(q);
    amount = delta;
  }
}

void KueueQuota::AddUsage(int q, absl::Span<const double> amounts, double sign) {
  for (int r = 0; r < R_ && r < static_cast<int>(amounts.size()); ++r)
    if (amounts[r] != 0) AddUsage(q, r, sign * amounts[r]);
}

double KueueQuota::Available(int q, int r) const {
  const int i = q * R_ + r;
  const int p = tree_.parent(q);
  if (p < 0) return subtree_quota_[i] - usage_[i];
  const double g = guaranteed_[i];
  double from_parent = Available(p, r);
  const double borrow = tree_.borrowing_limit(q, r);
  if (!std::isinf(borrow)) {
    const double stored = subtree_quota_[i] - g;
    const double used = std::max(0.0, usage_[i] - g);
    from_parent = std::min(from_parent, stored - used + borrow);
  }
  return std::max(0.0, g - usage_[i]) + from_parent;
}

bool KueueQuota::Fits(int q, absl::Span<const double> amounts) const {
  for (int r = 0; r < R_ && r < static_cast<int>(amounts.size()); ++r)
    if (tree_.configured(r) && amounts[r] > 0 && amounts[r] > Available(q, r) + 1e-9) return false;
  return true;
}

double KueueQuota::Drs(int q, absl::Span<const double> extra) const {
  const int p = tree_.parent(q);
  if (p < 0) return 0;
  const double w = tree_.weight(q);
  double drs = 0;
  bool borrowing = false;
  for (int r = 0; r < R_; ++r) {
    if (!tree_.configured(r)) continue;
    const int i = q * R_ + r;
    const double borrowed =
        usage_[i] + (r < static_cast<int>(extra.size()) ? extra[r] : 0.0) - subtree_quota_[i];
    if (borrowed <= 0) continue;
    borrowing = true;
    const double lendable = subtree_quota_[p * R_ + r];
    if (lendable > 0) drs = std::max(drs, borrowed / lendable);
  }
  if (!borrowing) return 0;
  if (w <= 0) return kUnlimited;
  return drs / w;
}

}  // namespace gpufleet::queues
