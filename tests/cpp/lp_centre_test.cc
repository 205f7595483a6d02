// The centre of an LP's optimal face (policies/lp_centre.h) on problems whose centre is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gpufleet/policies/lp_centre.h"
#include "gpufleet/policies/lp_solver.h"

namespace gpufleet::jobtime {
namespace {

TEST(LpCentre, AnalyticCentreOfAFeasibleSet) {
  // c = 0: the analytic centre of {x1 + x2 <= 1, x >= 0} maximises log x1 + log x2 +
  // log(1 - x1 - x2): x = (1/3, 1/3). A vertex solver would return a corner.
  absl::StatusOr<LpSolution> r = MaximizeLpCentred({{1, 1}}, {1}, {0, 0});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->x[0], 1.0 / 3, 1e-7);
  EXPECT_NEAR(r->x[1], 1.0 / 3, 1e-7);
}

TEST(LpCentre, CentreOfTheOptimalFace) {
  // max x1 + x2 s.t. x1 + x2 <= 1: the optimal face is the segment x1 + x2 = 1; its centre under
  // barrier weights w1, w2 on x1, x2 >= 0 is x1 = w1 / (w1 + w2).
  absl::StatusOr<LpSolution> even = MaximizeLpCentred({{1, 1}}, {1}, {1, 1});
  ASSERT_TRUE(even.ok()) << even.status();
  EXPECT_NEAR(even->objective, 1, 1e-7);
  EXPECT_NEAR(even->x[0], 0.5, 1e-6);
  absl::StatusOr<LpSolution> weighted =
      MaximizeLpCentred({{1, 1}}, {1}, {1, 1}, {.rows = {}, .columns = {3, 1}});
  ASSERT_TRUE(weighted.ok()) << weighted.status();
  EXPECT_NEAR(weighted->x[0], 0.75, 1e-6);
  EXPECT_NEAR(weighted->x[1], 0.25, 1e-6);
}

// A class of n identical jobs written once with barrier weight n lands where the n jobs written
// out do: max t s.t. t <= x_j (each job), sum x_j <= 3, x_j <= 1 (capacity and time share).
TEST(LpCentre, ClassWeightsEqualTheJobsWrittenOut) {
  // Written out: 2 jobs of class A (t <= x), 1 job of class B (t <= 2 y), capacity x1 + x2 + y <= 2.
  // Columns x1, x2, y, t (free).
  std::vector<std::vector<double>> a = {{-1, 0, 0, 1}, {0, -1, 0, 1}, {0, 0, -2, 1},
                                        {1, 0, 0, 0},  {0, 1, 0, 0},  {0, 0, 1, 0},
                                        {1, 1, 1, 0}};
  std::vector<double> b = {0, 0, 0, 1, 1, 1, 2};
  absl::StatusOr<LpSolution> out =
      MaximizeLpCentred(a, b, {0, 0, 0, 1}, {.rows = {}, .columns = {1, 1, 1, 0}});
  ASSERT_TRUE(out.ok()) << out.status();
  // Classes: x (weight 2), y, t: rows t <= x (2), t <= 2y, x <= 1 (2), y <= 1, 2x + y <= 2.
  absl::StatusOr<LpSolution> cls = MaximizeLpCentred(
      {{-1, 0, 1}, {0, -2, 1}, {1, 0, 0}, {0, 1, 0}, {2, 1, 0}}, {0, 0, 1, 1, 2}, {0, 0, 1},
      {.rows = {2, 1, 2, 1, 1}, .columns = {2, 1, 0}});
  ASSERT_TRUE(cls.ok()) << cls.status();
  EXPECT_NEAR(out->objective, cls->objective, 1e-7);
  EXPECT_NEAR(out->x[0], cls->x[0], 1e-6);
  EXPECT_NEAR(out->x[1], cls->x[0], 1e-6);
  EXPECT_NEAR(out->x[2], cls->x[1], 1e-6);
}

// Packed finish-time fairness's LP (gavel_ftf.cc) in small: 20 jobs on 3 models, a variable per
// job, per pair of jobs and model, and s with s <= each job's rate / its need. The face at the
// optimal s is wide and the barrier's weights span many orders of magnitude near it; the centre
// must still reach the optimum, and not depend on where the path starts (a permuted copy of the LP
// starts phase I, hence the path, elsewhere).
struct Lp {
  std::vector<std::vector<double>> a;
  std::vector<double> b, c;
};

Lp PackedFtfLp() {
  constexpr int kJobs = 20, kModels = 3;
  const double capacity[kModels] = {8, 8, 8};
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < kJobs; ++i)
    for (int j = i + 1; j < kJobs; ++j) pairs.push_back({i, j});
  const int rows = kJobs + static_cast<int>(pairs.size());
  const int vars = rows * kModels + 1;
  const int s = vars - 1;
  auto rate = [](int job, int model) { return 1.0 + 0.5 * ((job * 7 + model * 3) % 5) + model; };
  auto fraction = [](int pair, int model) { return 0.45 + 0.05 * ((pair * 11 + model) % 9); };
  Lp lp;
  lp.c.assign(vars, 0.0);
  lp.c[s] = 1;
  for (int j = 0; j < kJobs; ++j) {  // shares: alone and in pairs, at most 1
    std::vector<double> row(vars, 0.0);
    for (int m = 0; m < kModels; ++m) row[j * kModels + m] = 1;
    for (size_t p = 0; p < pairs.size(); ++p)
      if (pairs[p].first == j || pairs[p].second == j)
        for (int m = 0; m < kModels; ++m) row[(kJobs + p) * kModels + m] = 1;
    lp.a.push_back(row);
    lp.b.push_back(1);
  }
  for (int m = 0; m < kModels; ++m) {  // capacity: a pair's GPU counts once
    std::vector<double> row(vars, 0.0);
    for (int r = 0; r < rows; ++r) row[r * kModels + m] = 1;
    lp.a.push_back(row);
    lp.b.push_back(capacity[m]);
  }
  for (int j = 0; j < kJobs; ++j) {  // s - rate_j / need_j <= 0
    const double need = 0.8 + 0.1 * (j % 4);
    std::vector<double> row(vars, 0.0);
    row[s] = 1;
    for (int m = 0; m < kModels; ++m) row[j * kModels + m] = -rate(j, m) / need;
    for (size_t p = 0; p < pairs.size(); ++p)
      if (pairs[p].first == j || pairs[p].second == j)
        for (int m = 0; m < kModels; ++m)
          row[(kJobs + p) * kModels + m] = -rate(j, m) * fraction(static_cast<int>(p), m) / need;
    lp.a.push_back(row);
    lp.b.push_back(0);
  }
  return lp;
}

TEST(LpCentre, PackedFairnessCentreIsConvergedWhereverThePathStarts) {
  const Lp lp = PackedFtfLp();
  const int vars = static_cast<int>(lp.c.size());
  absl::StatusOr<LpSolution> vertex = MaximizeLp(lp.a, lp.b, lp.c);
  ASSERT_TRUE(vertex.ok()) << vertex.status();
  absl::StatusOr<LpSolution> centre = MaximizeLpCentred(lp.a, lp.b, lp.c);
  ASSERT_TRUE(centre.ok()) << centre.status();
  EXPECT_NEAR(centre->objective, vertex->objective, 1e-8 * vertex->objective);
  // The same LP with its columns reversed and its rows rotated.
  Lp permuted;
  for (size_t r = 0; r < lp.b.size(); ++r) {
    const size_t from = (r + 7) % lp.b.size();
    permuted.a.push_back(std::vector<double>(lp.a[from].rbegin(), lp.a[from].rend()));
    permuted.b.push_back(lp.b[from]);
  }
  permuted.c.assign(lp.c.rbegin(), lp.c.rend());
  absl::StatusOr<LpSolution> other = MaximizeLpCentred(permuted.a, permuted.b, permuted.c);
  ASSERT_TRUE(other.ok()) << other.status();
  double largest = 0;
  for (int k = 0; k < vars; ++k)
    largest = std::max(largest, std::fabs(centre->x[k] - other->x[vars - 1 - k]));
  EXPECT_LT(largest, 1e-5);  // the floor of the centring near the optimum
}

TEST(LpCentre, ErrorsAreNamed) {
  // No interior: x1 + x2 <= 0 leaves only the origin.
  absl::StatusOr<LpSolution> flat = MaximizeLpCentred({{1, 1}}, {0}, {1, 0});
  EXPECT_EQ(flat.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(flat.status().message().find("no interior"), std::string::npos);
  EXPECT_EQ(MaximizeLpCentred({{1}}, {-1}, {1}).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "infeasible";
  EXPECT_EQ(MaximizeLpCentred({{1, 1}}, {1}, {1, 1}, {.rows = {0}, .columns = {}}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a row weight of 0";
  EXPECT_EQ(MaximizeLpCentred({{1, 1}}, {1}, {1, 1}, {.rows = {}, .columns = {1}}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "column weights of the wrong length";
}

}  // namespace
}  // namespace gpufleet::jobtime
