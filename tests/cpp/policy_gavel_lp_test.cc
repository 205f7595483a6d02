// The LP solver behind gavel-lp (COIN-OR CLP), and gavel-lp realising Gavel's max-min allocation
// over rounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>

#include "gpufleet/policies/gavel_lp.h"
#include "gpufleet/policies/lp_solver.h"
#include "gpufleet/sim/simulator.h"

namespace gpufleet::jobtime {
namespace {

using sim::SimOptions;
using sim::Simulate;

TEST(LpSolver, SolvesATextbookLp) {
  // max 3x + 5y  s.t.  x <= 4, 2y <= 12, 3x + 2y <= 18: optimum 36 at (2, 6).
  absl::StatusOr<LpSolution> r = MaximizeLp({{1, 0}, {0, 2}, {3, 2}}, {4, 12, 18}, {3, 5});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->objective, 36, 1e-9);
  EXPECT_NEAR(r->x[0], 2, 1e-9);
  EXPECT_NEAR(r->x[1], 6, 1e-9);
}

TEST(LpSolver, DegenerateStartAndMaxMinShape) {
  // max t s.t. t <= x1, t <= 2 x2, x1 + x2 <= 3: t = 2 at x1 = 2, x2 = 1 (rows with b = 0).
  absl::StatusOr<LpSolution> r =
      MaximizeLp({{1, -1, 0}, {1, 0, -2}, {0, 1, 1}}, {0, 0, 3}, {1, 0, 0});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->objective, 2, 1e-9);
  EXPECT_NEAR(r->x[1], 2, 1e-9);
  EXPECT_NEAR(r->x[2], 1, 1e-9);
}

TEST(LpSolver, NegativeRightHandSidesAndEmptyShapes) {
  // x >= 1 written as -x <= -1: the origin is infeasible, the optimum is not.
  absl::StatusOr<LpSolution> r = MaximizeLp({{-1, 0}, {1, 1}}, {-1, 3}, {0, 1});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->objective, 2, 1e-9);
  EXPECT_NEAR(r->x[0], 1, 1e-9);
  absl::StatusOr<LpSolution> no_rows = MaximizeLp({}, {}, {-1, 0});
  ASSERT_TRUE(no_rows.ok()) << no_rows.status();
  EXPECT_EQ(no_rows->x, std::vector<double>({0, 0}));
  absl::StatusOr<LpSolution> no_columns = MaximizeLp({{}, {}}, {1, 2}, {});
  ASSERT_TRUE(no_columns.ok()) << no_columns.status();
  EXPECT_TRUE(no_columns->x.empty());
}

TEST(LpSolver, InfeasibleUnboundedAndIterationLimitAreReported) {
  absl::StatusOr<LpSolution> unbounded = MaximizeLp({{-1}}, {1}, {1});
  EXPECT_EQ(unbounded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unbounded.status().message().find("unbounded"), std::string::npos);
  absl::StatusOr<LpSolution> infeasible = MaximizeLp({{1}}, {-1}, {1});
  EXPECT_EQ(infeasible.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(infeasible.status().message().find("infeasible"), std::string::npos);
  // Feasible (x1 >= 3.5) and unbounded through the all-zero column x0, which CLP 1.17 on its own
  // reports as infeasible.
  absl::StatusOr<LpSolution> empty_column = MaximizeLp({{0, -0.2}}, {-0.7}, {0.1, 0});
  EXPECT_EQ(empty_column.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(empty_column.status().message().find("unbounded"), std::string::npos);
  absl::StatusOr<LpSolution> idle_column = MaximizeLp({{0, -0.2}}, {-0.7}, {-0.1, -1});
  ASSERT_TRUE(idle_column.ok()) << idle_column.status();
  EXPECT_NEAR(idle_column->objective, -3.5, 1e-9);
  EXPECT_EQ(idle_column->x[0], 0);
  absl::StatusOr<LpSolution> limited = MaximizeLp({{1, 0}, {0, 2}, {3, 2}}, {4, 12, 18}, {3, 5}, 0);
  EXPECT_EQ(limited.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(limited.status().message().find("iteration limit"), std::string::npos);
}

TEST(LpSolver, BadInputIsNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto message = [](const absl::StatusOr<LpSolution>& r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  EXPECT_NE(message(MaximizeLp({{1, 2}}, {1}, {1})).find("row 0 of A has 2 entries but c has 1"),
            std::string::npos);
  EXPECT_NE(message(MaximizeLp({{1}}, {1, 2}, {1})).find("A has 1 rows but b has 2"),
            std::string::npos);
  EXPECT_NE(message(MaximizeLp({{1, 2}, {3, nan}}, {1, 1}, {1, 1})).find("A[1][1] must be finite"),
            std::string::npos);
  EXPECT_NE(message(MaximizeLp({{1}}, {inf}, {1})).find("b[0] must be finite"), std::string::npos);
  EXPECT_NE(message(MaximizeLp({{1}}, {1}, {-inf})).find("c[0] must be finite"), std::string::npos);
  EXPECT_NE(message(MaximizeLp({{1e25}}, {1}, {1})).find("A[0][0] = 1e+25 exceeds"),
            std::string::npos);
  EXPECT_NE(message(MaximizeLp({{1}}, {1}, {1}, -1)).find("max_iterations"), std::string::npos);
}

// Each call owns its CLP model: concurrent solves give exactly the single-threaded answers.
TEST(LpSolver, ConcurrentCallsShareNoState) {
  auto instance = [](int i) {
    const double s = 1 + 0.01 * i;
    return std::vector<std::vector<double>>{{1, 0, -s}, {0, 2, -1}, {3 * s, 2, 1}, {1, 1, 1}};
  };
  const std::vector<double> b = {4, 12, 18, 9}, c = {3, 5, 1};
  constexpr int kInstances = 64;
  std::vector<double> expected(kInstances);
  for (int i = 0; i < kInstances; ++i) expected[i] = MaximizeLp(instance(i), b, c)->objective;
  std::vector<std::vector<double>> got(4, std::vector<double>(kInstances));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kInstances; ++i) {
        absl::StatusOr<LpSolution> r = MaximizeLp(instance(i), b, c);
        got[t][i] = r.ok() ? r->objective : -1;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t], expected) << "thread " << t;
}

JobSpec Job2(int64_t id, double work, std::vector<double> speed) {
  JobSpec s;
  s.id = id;
  s.num_gpu = 1;
  s.duration = work;
  s.speed = std::move(speed);
  return s;
}

// One fast and one slow GPU; job A runs at 1.0 / 0.5, job B at 1.0 / 0.1. Each job's throughput
// under an equal share is 0.75 (A) and 0.55 (B); the max-min LP's unique optimum gives each job
// half its time on each GPU, so both reach exactly their equal-share throughput (t = 1). Rounds
// realise it by alternating, so A (work 10,000) finishes near 10,000 / 0.75 = 13,333 s; B then
// has the fast GPU alone for its remaining 10,000 - 0.55 x 13,333 = 2,667 s of work.
TEST(GavelLp, RoundsRealiseTheMaxMinAllocation) {
  GpuPool pool = GpuPool::FromJson(Json::array({{{"name", "v100"}, {"count", 1}},
                                                {{"name", "k80"}, {"count", 1}}}))
                     .value();
  std::vector<JobSpec> jobs = {Job2(1, 10000, {1.0, 0.5}), Job2(2, 10000, {1.0, 0.1})};
  auto policy = MakeJobTimePolicy("gavel-lp").value();
  auto r = Simulate(pool, jobs, *policy, SimOptions{}).value();
  EXPECT_NEAR(r.jobs[0].end_time, 13333, 13333 * 0.03);
  EXPECT_NEAR(r.jobs[1].end_time, 13333 + 2667, 400);  // up to one round late on the fast GPU
  EXPECT_GT(r.summary.migrations, 10) << "rounds alternate the two jobs between the models";
}

// One V100 and two K80s, job A at 1.0 / 0.5 and job B at 1.0 / 0.1. Equal-share throughputs:
// A 1/3 + 2/3 x 0.5 = 2/3, B 1/3 + 2/3 x 0.1 = 0.4. Alternating the V100 (A a fraction x of the
// time, B the rest, each on a K80 otherwise) equalises (0.5 + 0.5x) / (2/3) = (1 - 0.9x) / 0.4
// at x = 7/12: both reach t = 1.1875. Blind to speeds, every split of the time is equally fair
// (t = 1 in its own terms), so the agnostic LP cannot prefer that allocation.
TEST(GavelLp, AwareSharesFavourTheJobThatGainsMost) {
  absl::StatusOr<MaxMinShares> solved =
      SolveMaxMinShares({{1, 1, {1.0, 0.5}}, {1, 1, {1.0, 0.1}}}, {1, 2});
  ASSERT_TRUE(solved.ok()) << solved.status();
  const MaxMinShares& aware = *solved;
  EXPECT_NEAR(aware.t, 1.1875, 1e-6);
  EXPECT_NEAR(aware.x[0][0], 7.0 / 12, 1e-6);
  EXPECT_NEAR(aware.x[1][0], 5.0 / 12, 1e-6);
  // Whatever the optimum's split, each job's normalised throughput reaches t.
  const double equal[] = {2.0 / 3, 0.4};
  const double speed[2][2] = {{1.0, 0.5}, {1.0, 0.1}};
  for (int k = 0; k < 2; ++k)
    EXPECT_GE((speed[k][0] * aware.x[k][0] + speed[k][1] * aware.x[k][1]) / equal[k],
              aware.t - 1e-9);
  // Identical jobs form one class: two of them share the V100 half-and-half.
  absl::StatusOr<MaxMinShares> same = SolveMaxMinShares({{2, 1, {1.0, 1.0}}}, {1, 2});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_NEAR(same->t, 1.0, 1e-6);
  EXPECT_LE(2 * same->x[0][0], 1.0 + 1e-9);
  EXPECT_EQ(SolveMaxMinShares({{1, 1, {1.0}}}, {1, 2}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "speeds of the wrong length";
}

TEST(GavelLp, BadParametersAreNamed) {
  auto bad = MakeJobTimePolicy("gavel-lp(round_duration=0)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gavel-lp"), std::string::npos);
  EXPECT_FALSE(MakeJobTimePolicy("gavel-lp(rounds=3)").ok());
}

}  // namespace
}  // namespace gpufleet::jobtime
