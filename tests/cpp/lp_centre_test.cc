// The centre of an LP's optimal face (policies/lp_centre.h) on problems whose centre is known.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpufleet/policies/lp_centre.h"

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
