#include "gpufleet/queues/usage_history.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace gpufleet::queues {
namespace {

// The integral over [from, to] of 0.5^((now - s) / half_life) ds (no decay: to - from).
double DecayedSpan(double from, double to, double now, double half_life) {
  if (to <= from) return 0;
  if (half_life <= 0) return to - from;
  const double k = std::log(2.0) / half_life;
  return (std::exp(-k * (now - to)) - std::exp(-k * (now - from))) / k;
}

}  // namespace

absl::Status UsageParams::Check() const {
  if (!(half_life >= 0) || std::isinf(half_life) || !(window >= 0) || std::isinf(window))
    return absl::InvalidArgumentError(absl::StrFormat(
        "usage history: half_life and window must be finite numbers of seconds >= 0 (got %g, %g)",
        half_life, window));
  return absl::OkStatus();
}

void UsageHistory::Add(Series& s, int R, double from, double to, absl::Span<const double> amounts,
                       const UsageParams& p) {
  if (to <= from) return;
  if (p.window <= 0) {
    s.decayed.resize(R, 0.0);
    const double keep = p.half_life > 0 ? std::exp2(-(to - from) / p.half_life) : 1.0;
    const double span = DecayedSpan(from, to, to, p.half_life);
    for (int r = 0; r < R; ++r) s.decayed[r] = s.decayed[r] * keep + amounts[r] * span;
    return;
  }
  const double width = p.window / kBuckets;
  s.buckets.resize(static_cast<size_t>(kBuckets) * R, 0.0);
  s.bucket_ids.resize(kBuckets, -1);
  from = std::max(from, to - p.window);  // older time falls out of the window anyway
  for (double t = from; t < to;) {
    const int64_t id = static_cast<int64_t>(std::floor(t / width));
    const double end = std::min(to, (id + 1) * width);
    const int slot = static_cast<int>(((id % kBuckets) + kBuckets) % kBuckets);
    if (s.bucket_ids[slot] != id) {
      s.bucket_ids[slot] = id;
      std::fill_n(s.buckets.begin() + slot * R, R, 0.0);
    }
    for (int r = 0; r < R; ++r) s.buckets[slot * R + r] += amounts[r] * (end - t);
    if (end <= t) break;
    t = end;
  }
}

double UsageHistory::Weighted(const Series& s, int r, double now, const UsageParams& p) const {
  if (p.window <= 0) {
    if (r >= static_cast<int>(s.decayed.size())) return 0;
    const double keep = p.half_life > 0 ? std::exp2(-(now - last_) / p.half_life) : 1.0;
    return s.decayed[r] * keep;
  }
  const double width = p.window / kBuckets;
  const int R = s.bucket_ids.empty() ? 0 : static_cast<int>(s.buckets.size() / kBuckets);
  if (r >= R) return 0;
  double sum = 0;
  for (int slot = 0; slot < kBuckets; ++slot) {
    const int64_t id = s.bucket_ids[slot];
    if (id < 0 || (id + 1) * width <= now - p.window) continue;
    const double mid = (id + 0.5) * width;
    const double w = p.half_life > 0 ? std::exp2(-(now - mid) / p.half_life) : 1.0;
    sum += s.buckets[slot * R + r] * w;
  }
  return sum;
}

void UsageHistory::Advance(double now, const std::vector<std::string>& names, int R,
                           absl::Span<const double> allocated, absl::Span<const double> capacity,
                           const UsageParams& p) {
  if (!started_ || now < last_) {
    started_ = true;
    last_ = now;
    return;
  }
  if (now == last_) return;
  Add(capacity_, R, last_, now, capacity, p);
  for (size_t q = 0; q < names.size(); ++q)
    Add(queues_[names[q]], R, last_, now, allocated.subspan(q * R, R), p);
  last_ = now;
}

void UsageHistory::Normalized(const std::vector<std::string>& names, int R, double now,
                              const UsageParams& p, std::vector<double>* out) const {
  out->assign(names.size() * R, 0.0);
  for (int r = 0; r < R; ++r) {
    const double cap = Weighted(capacity_, r, now, p);
    if (cap <= 0) continue;
    for (size_t q = 0; q < names.size(); ++q) {
      auto it = queues_.find(names[q]);
      if (it != queues_.end()) (*out)[q * R + r] = Weighted(it->second, r, now, p) / cap;
    }
  }
}

}  // namespace gpufleet::queues
