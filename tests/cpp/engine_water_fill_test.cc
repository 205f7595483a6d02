// Deserved shares (kube-batch issues 665 and 729): a hand-checked table, edge cases that crashed
// kube-batch, and a property test against an independent bisection on the water level.
#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "gpufleet/engine/water_fill.h"

namespace gpufleet::engine {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Row {
  double total;
  std::vector<double> weights, caps, expect;
};

TEST(EngineWaterFillTest, HandCheckedTable) {
  const std::vector<Row> rows = {
      // Equal weights, demand above capacity: an even split.
      {8, {1, 1}, {10, 10}, {4, 4}},
      // 1:3 weights: 2 and 6.
      {8, {1, 3}, {kInf, kInf}, {2, 6}},
      // A queue asking less than its fair share gives the rest away (issue 729).
      {8, {1, 1}, {1, 20}, {1, 7}},
      // Three queues, one capped by capability (cap 1), the rest split 2:1 of the remaining 9.
      {10, {1, 2, 1}, {1, kInf, kInf}, {1, 6, 3}},
      // Demand below capacity: everyone gets its demand, the remainder stays unassigned.
      {10, {1, 1}, {2, 3}, {2, 3}},
      // Zero-weight queue only gets what weighted queues leave.
      {10, {0, 1}, {5, 7}, {3, 7}},
      {10, {0, 1}, {5, 20}, {0, 10}},
      // Two zero-weight queues split the leftover equally.
      {10, {0, 0, 1}, {5, 5, 4}, {3, 3, 4}},
      // Empty cluster (issue 665): nothing to give, no crash.
      {0, {1, 1}, {4, 4}, {0, 0}},
      // Zero demand everywhere.
      {8, {1, 2}, {0, 0}, {0, 0}},
      // Negative remaining (an over-committed capacity figure) is treated as nothing.
      {-3, {1}, {4}, {0}},
      // A resource that is in demand but on no node.
      {0, {1, 3}, {2, 5}, {0, 0}},
      // No queues.
      {8, {}, {}, {}},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::vector<double> got = WaterFill(r.total, r.weights, r.caps);
    ASSERT_EQ(got.size(), r.expect.size()) << "row " << i;
    for (size_t q = 0; q < got.size(); ++q)
      EXPECT_NEAR(got[q], r.expect[q], 1e-9) << "row " << i << " queue " << q;
  }
}

// Independent method: bisection on the level L with share_q = min(cap_q, L * w_q) for weighted
// queues, then the same for the zero-weight queues on what is left (weights 1).
std::vector<double> ByBisection(double total, const std::vector<double>& w, const std::vector<double>& cap) {
  const size_t n = w.size();
  std::vector<double> out(n, 0.0);
  auto fill = [&](double avail, const std::vector<size_t>& members, bool unit) {
    double demand = 0;
    for (size_t q : members) demand += cap[q];
    if (demand <= avail) {
      for (size_t q : members) out[q] = cap[q];
      return avail - demand;
    }
    double lo = 0, hi = 1;
    auto sum = [&](double L) {
      double s = 0;
      for (size_t q : members) s += std::min(cap[q], L * (unit ? 1.0 : w[q]));
      return s;
    };
    while (sum(hi) < avail) hi *= 2;
    for (int it = 0; it < 200; ++it) {
      double mid = 0.5 * (lo + hi);
      (sum(mid) < avail ? lo : hi) = mid;
    }
    for (size_t q : members) out[q] = std::min(cap[q], hi * (unit ? 1.0 : w[q]));
    return 0.0;
  };
  std::vector<size_t> weighted, zero;
  for (size_t q = 0; q < n; ++q) (w[q] > 0 ? weighted : zero).push_back(q);
  double left = fill(std::max(0.0, total), weighted, false);
  fill(left, zero, true);
  return out;
}

TEST(EngineWaterFillTest, PropertyMatchesBisectionAndInvariants) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> nq(1, 8);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = nq(rng);
    double total = u(rng) < 0.1 ? 0.0 : 100 * u(rng);
    std::vector<double> w(n), cap(n);
    for (int q = 0; q < n; ++q) {
      w[q] = u(rng) < 0.15 ? 0.0 : std::ceil(10 * u(rng));
      cap[q] = u(rng) < 0.1 ? 0.0 : (u(rng) < 0.1 ? kInf : 60 * u(rng));
    }
    std::vector<double> got = WaterFill(total, w, cap);
    std::vector<double> want = ByBisection(total, w, cap);
    double sum = 0, demand = 0;
    for (int q = 0; q < n; ++q) {
      EXPECT_NEAR(got[q], want[q], 1e-6 * std::max(1.0, total)) << "trial " << trial << " queue " << q;
      EXPECT_GE(got[q], 0.0);
      EXPECT_LE(got[q], cap[q] + 1e-9);  // never above demand/capability
      sum += got[q];
      demand += cap[q];
    }
    // Sums to the capacity when demand exceeds it, to the demand otherwise.
    EXPECT_NEAR(sum, std::min(total, demand), 1e-6 * std::max(1.0, total)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace gpufleet::engine
