#include "gpufleet/engine/water_fill.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpufleet::engine {
namespace {

double Clean(double x) { return std::isnan(x) || x < 0 ? 0.0 : x; }

// Fills `members` (indices) with weights `w` up to their caps from `remaining`; returns what is
// left. Members are visited in order of cap / weight: those below the current fair share are
// satisfied and leave, the rest split what remains in proportion to their weights.
double Fill(double remaining, const std::vector<int>& members, const std::vector<double>& w,
            const std::vector<double>& caps, std::vector<double>* out) {
  std::vector<int> order = members;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    double ra = caps[a] / w[a], rb = caps[b] / w[b];
    return ra != rb ? ra < rb : a < b;
  });
  double weight_left = 0;
  for (int q : order) weight_left += w[q];
  for (size_t k = 0; k < order.size(); ++k) {
    int q = order[k];
    if (remaining <= 0 || weight_left <= 0) break;
    double fair = remaining * w[q] / weight_left;
    if (caps[q] <= fair) {
      (*out)[q] = caps[q];
      remaining -= caps[q];
      weight_left -= w[q];
      continue;
    }
    // Everyone from here on is capped above the fair level: split by weight and stop.
    for (size_t m = k; m < order.size(); ++m) (*out)[order[m]] = remaining * w[order[m]] / weight_left;
    return 0.0;
  }
  return std::max(0.0, remaining);
}

}  // namespace

std::vector<double> WaterFill(double total, const std::vector<double>& weights,
                              const std::vector<double>& caps) {
  const size_t n = weights.size();
  std::vector<double> out(n, 0.0), cap(n), w(n);
  std::vector<int> weighted, unweighted;
  for (size_t q = 0; q < n; ++q) {
    cap[q] = q < caps.size() ? Clean(caps[q]) : 0.0;
    w[q] = Clean(weights[q]);
    if (std::isinf(w[q])) w[q] = 0;
    if (cap[q] <= 0) continue;
    (w[q] > 0 ? weighted : unweighted).push_back(static_cast<int>(q));
  }
  double remaining = Clean(total);
  if (std::isinf(remaining)) remaining = 0;
  remaining = Fill(remaining, weighted, w, cap, &out);
  std::vector<double> ones(n, 1.0);
  Fill(remaining, unweighted, ones, cap, &out);
  return out;
}

}  // namespace gpufleet::engine
