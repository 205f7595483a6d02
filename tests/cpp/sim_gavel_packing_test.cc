// Gavel's packing in the simulator's Gavel-compatible mode (sim/gavel_rounds.h, GavelCompat's
// co-located rates): a pair of jobs runs on one set of GPUs, each job at its co-located rate, the
// GPUs counted once and the pair's micro-task charged once; a failed pair micro-task counts against
// neither job. Outcomes follow from Gavel's rules (docs/simulator.md, "Packing").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpufleet/policies/gavel_allocation_lp.h"
#include "gpufleet/policies/job_time_policy.h"
#include "gpufleet/policies/lp_centre.h"
#include "gpufleet/policies/lp_solver.h"
#include "gpufleet/sim/simulator.h"

namespace gpufleet::jobtime {
namespace {

using sim::SimOptions;
using sim::Simulate;

JobSpec Steps(int64_t id, int gpus, double steps, double rate) {
  JobSpec s;
  s.id = id;
  s.num_gpu = gpus;
  s.duration = steps;
  s.speed = {rate};
  return s;
}

// One model; job i has type i; alone 10 steps/s; together job 0 runs at 9 and job 1 at 8 steps/s
// (summed normalised rate 1.7, above FIFO's packing threshold of 1.5).
SimOptions Packable() {
  SimOptions o;
  o.gavel.enabled = true;
  o.placement = "";
  o.gavel.job_type = {0, 1};
  o.gavel.types = 2;
  o.gavel.pair_rate = {10, 9, 8, 10};  // [a][b][model]: 0 with 0, 0 with 1, 1 with 0, 1 with 1
  return o;
}

GpuPool Pool(int gpus) { return GpuPool::FromJson({{"v100", gpus}}).value(); }

// Runs jobs 0 and 1 as a pair each round while both are active (then alone), and records what the
// rounds report about the pair.
class AlwaysPair : public JobTimePolicy {
 public:
  void OnArrival(int job, const JobTimeView&) override { active_.push_back(job); }
  void OnFinish(int job, const JobTimeView&) override { std::erase(active_, job); }
  void Schedule(const JobTimeView&, std::vector<Assignment>* plan) override {
    if (active_.size() == 2 && static_cast<int>(calls_.size()) < max_pairs_)
      plan->push_back({0, 0, 1});
    else
      for (int j : active_) plan->push_back({j, 0});
  }
  double MicroTaskSeconds() const override { return 360; }
  void OnMicroTask(int job, int, double, bool, const JobTimeView&) override {
    ++singles_;
    if (job == 1) ++singles_of_1_;
  }
  void OnPairMicroTask(int job, int partner, int model, double charged, bool succeeded,
                       const JobTimeView&) override {
    calls_.push_back({double(job), double(partner), double(model), charged, succeeded ? 1.0 : 0.0});
  }
  int max_pairs_ = 1 << 30;
  std::vector<int> active_;
  int singles_ = 0, singles_of_1_ = 0;
  std::vector<std::vector<double>> calls_;
};

// Job 0 (1,800 steps) ends its share at 200 s at 9 steps/s, job 1 (2,880 steps) at 360 s at 8:
// both end with the pair's micro-task at 360 s (Gavel gives both the pair's finish), on one GPU.
TEST(GavelPacking, PairRunsAtCoLocatedRatesOnGpusCountedOnce) {
  AlwaysPair policy;
  auto r = Simulate(Pool(1), {Steps(0, 1, 1800, 10), Steps(1, 1, 2880, 10)}, policy, Packable())
               .value();
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 360);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_time, 360);
  EXPECT_DOUBLE_EQ(r.summary.makespan, 360);
  EXPECT_DOUBLE_EQ(r.summary.gpu_utilization, 1.0);  // one GPU busy 360 s, not two
  ASSERT_EQ(policy.calls_.size(), 1u);
  EXPECT_EQ(policy.calls_[0], (std::vector<double>{0, 1, 0, 360, 1}));  // charged once: 360 s
  EXPECT_EQ(policy.singles_, 0);
}

// A 2-GPU pair whose job 1 has one step left: its first worker gets 1 // 2 = 0 steps, so every pair
// micro-task fails, makes no progress and counts against neither job (Gavel counts failures of
// single jobs only): after six failed pair tries job 1 is still there; alone, it is dropped after
// its fifth failure as a single job.
TEST(GavelPacking, FailedPairMicroTasksCountAgainstNeitherJob) {
  AlwaysPair policy;
  policy.max_pairs_ = 6;
  auto r = Simulate(Pool(4), {Steps(0, 2, 7200, 10), Steps(1, 2, 1, 10)}, policy, Packable())
               .value();
  ASSERT_EQ(policy.calls_.size(), 6u);
  for (const auto& call : policy.calls_) EXPECT_EQ(call[4], 0.0);  // every pair try failed
  EXPECT_TRUE(r.jobs[1].dropped);
  EXPECT_EQ(policy.singles_of_1_, 5);
  EXPECT_FALSE(r.jobs[0].dropped);
  EXPECT_DOUBLE_EQ(r.jobs[0].work_done, 7200);  // no progress while paired: two rounds alone
}

// gavel-fifo(packing=true) packs the queued job onto the running one (fifo_packed): both end at
// 360 s. Without packing the second waits for the first (324 s) and runs alone until 612 s.
TEST(GavelPacking, FifoPackedPacksTheQueuedJob) {
  const std::vector<JobSpec> jobs = {Steps(0, 1, 3240, 10), Steps(1, 1, 2880, 10)};
  auto packed = MakeJobTimePolicy("gavel-fifo(packing=true)").value();
  auto r = Simulate(Pool(1), jobs, *packed, Packable()).value();
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 360);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_time, 360);
  auto plain = MakeJobTimePolicy("gavel-fifo").value();
  auto p = Simulate(Pool(1), jobs, *plain, Packable()).value();
  EXPECT_DOUBLE_EQ(p.jobs[0].end_time, 324);
  EXPECT_DOUBLE_EQ(p.jobs[1].end_time, 612);
}

// The LP policies put the pair in their allocation too, and the rounds run it.
TEST(GavelPacking, LpPoliciesRunThePair) {
  const std::vector<JobSpec> jobs = {Steps(0, 1, 3240, 10), Steps(1, 1, 2880, 10)};
  for (std::string name : {"gavel-lp", "gavel-makespan", "gavel-ftf"}) {
    auto packed = MakeJobTimePolicy(name + "(packing=true)").value();
    auto r = Simulate(Pool(1), jobs, *packed, Packable()).value();
    auto plain = MakeJobTimePolicy(name).value();
    auto p = Simulate(Pool(1), jobs, *plain, Packable()).value();
    EXPECT_LT(r.summary.makespan, p.summary.makespan) << name;
  }
}

TEST(GavelPacking, PlanCheckCountsAPairsGpusOnceAndRefusesBadPairs) {
  const GpuPool pool = Pool(2);
  std::vector<Job> jobs(3);
  for (int i = 0; i < 3; ++i) {
    jobs[i].spec = Steps(i, i < 2 ? 2 : 1, 100, 10);
    jobs[i].state = JobState::kPending;
  }
  std::vector<int> busy = {0}, planned(3, -1), used;
  auto label = [](int i) { return std::to_string(i); };
  EXPECT_TRUE(CheckPlan({{0, 0, 1}}, jobs, pool, busy, false, label, &planned, &used).ok());
  EXPECT_EQ(used[0], 2);
  EXPECT_EQ(planned[1], 0);
  planned.assign(3, -1);
  // Another GPU count, the same job twice, and two pairs on two GPUs.
  EXPECT_FALSE(CheckPlan({{0, 0, 2}}, jobs, pool, busy, false, label, &planned, &used).ok());
  EXPECT_FALSE(CheckPlan({{0, 0, 0}}, jobs, pool, busy, false, label, &planned, &used).ok());
  EXPECT_FALSE(
      CheckPlan({{0, 0, 1}, {2, 0}}, jobs, pool, busy, false, label, &planned, &used).ok());
  EXPECT_EQ(planned, (std::vector<int>{-1, -1, -1}));  // left as it was
}

TEST(GavelPacking, RefusesBadRatesAndPackingOutsideGavelsMode) {
  auto policy = MakeJobTimePolicy("gavel-fifo(packing=true)").value();
  const std::vector<JobSpec> jobs = {Steps(0, 1, 100, 10), Steps(1, 1, 100, 10)};
  SimOptions short_types = Packable();
  short_types.gavel.job_type = {0};
  auto a = Simulate(Pool(1), jobs, *policy, short_types);
  EXPECT_NE(a.status().message().find("job_type has 1 entries for 2 jobs"), std::string::npos);
  SimOptions bad_rate = Packable();
  bad_rate.gavel.pair_rate[1] = -1;
  auto b = Simulate(Pool(1), jobs, *policy, bad_rate);
  EXPECT_NE(b.status().message().find("pair_rate[0][1][0]"), std::string::npos);
  SimOptions plain;
  plain.placement = "";
  auto c = Simulate(Pool(1), jobs, *policy, plain);
  EXPECT_NE(c.status().message().find("Gavel-compatible mode"), std::string::npos);
  EXPECT_FALSE(MakeJobTimePolicy("gavel-lp(packing=true,aware=false)").ok());
}

// A packed max-min LP of 40 jobs on three models (every pair: 2,460 x variables, every row long):
// its centre reaches CLP's optimum (to the path's tolerance), and every row holds there.
TEST(GavelPacking, CentreOfALargePackedLpReachesTheOptimum) {
  AllocationInput in;
  in.gavel = true;
  in.capacity = {4, 6, 8};
  const int n = 40;
  for (int j = 0; j < n; ++j)
    in.jobs.push_back({.job = j, .gpus = 1, .rate = {1.0 + j % 3, 2.0 + j % 5, 3.0 + j % 7}});
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      AllocationPair p{.a = a, .b = b};
      for (int c = 0; c < 3; ++c) {
        p.rate_a.push_back(0.6 * in.jobs[a].rate[c] * (1 + (a + b + c) % 4) / 4);
        p.rate_b.push_back(0.6 * in.jobs[b].rate[c] * (1 + (a * b + c) % 3) / 3);
      }
      in.pairs.push_back(std::move(p));
    }
  AllocationLp lp(in, 1);
  const int t = lp.extra(0);
  for (int j = 0; j < n; ++j) {
    std::vector<double> row(lp.vars(), 0.0);
    row[t] = 1.0;
    lp.AddThroughput(in, j, -1.0, &row, in.jobs[j].rate[2]);
    lp.AddRow(std::move(row), 0.0);
  }
  std::vector<double> c(lp.vars(), 0.0);
  c[t] = 1.0;
  ASSERT_GT(lp.vars(), 1500);
  const double best = MaximizeLp(lp.a(), lp.b(), c).value().objective;
  auto centre = MaximizeLpCentred(lp.a(), lp.b(), c, lp.weights()).value();
  EXPECT_NEAR(centre.objective, best, 1e-4 * best);
  for (size_t r = 0; r < lp.b().size(); ++r) {
    double lhs = 0;
    for (int k = 0; k < lp.vars(); ++k) lhs += lp.a()[r][k] * centre.x[k];
    EXPECT_LE(lhs, lp.b()[r] + 1e-9) << "row " << r;
  }
}

}  // namespace
}  // namespace gpufleet::jobtime
