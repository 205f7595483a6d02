// Policies register by name; specs with parameters build them; bad parameters are errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "gpufleet/sim/simulator.h"

namespace gpufleet::sim {

using jobtime::GpuPool;
using jobtime::JobSpec;
using jobtime::JobTimePolicy;
using jobtime::MakeJobTimePolicy;
namespace {

TEST(PolicyRegistry, ExpectedNamesAndNoDuplicates) {
  auto names = Registry<JobTimePolicy>::Global().Names();
  for (const char* n : {"fifo", "sjf", "srtf", "las", "dlas-gpu", "gittins", "hetero-las",
                        "gavel-maxmin"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_TRUE(Registry<JobTimePolicy>::Global().DuplicateNames().empty());
  EXPECT_FALSE(Registry<JobTimePolicy>::Global().Info("dlas-gpu")->description.empty());
}

TEST(PolicyRegistry, SpecsAndErrors) {
  EXPECT_TRUE(MakeJobTimePolicy("dlas-gpu(queue_limits=[3250,7200])").ok());
  EXPECT_TRUE(MakeJobTimePolicy("hetero-las(priority_threshold_ratio=1.5, swap=false)").ok());
  auto unknown = MakeJobTimePolicy("lottery");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(MakeJobTimePolicy("dlas-gpu(queue_limits=[7200,3250])").ok());
  EXPECT_FALSE(MakeJobTimePolicy("dlas-gpu(queue_limit=[1])").ok());  // typo
  EXPECT_FALSE(MakeJobTimePolicy("fifo(backfill=3)").ok());
  EXPECT_FALSE(MakeJobTimePolicy("gittins").ok());  // no distribution
  EXPECT_FALSE(MakeJobTimePolicy("gittins(distribution_file=\"/nonexistent.csv\")").ok());
  EXPECT_FALSE(MakeJobTimePolicy("las(service=\"memory\")").ok());
}

JobSpec J(int64_t id, double submit, int gpus, double duration, std::vector<double> speed = {}) {
  JobSpec s;
  s.id = id;
  s.submit_time = submit;
  s.num_gpu = gpus;
  s.duration = duration;
  s.speed = std::move(speed);
  return s;
}

SimResult RunSim(const Json& cluster, std::vector<JobSpec> jobs, const std::string& policy,
                 SimOptions o = {}) {
  GpuPool pool = GpuPool::FromJson(cluster).value();
  auto p = MakeJobTimePolicy(policy).value();
  auto r = Simulate(pool, std::move(jobs), *p, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *std::move(r);
}

TEST(PolicyDlasGpu, DemotesAtTheQueueLimit) {
  // Job 1 (2 GPUs) passes 100 GPU-seconds at t=50 and drops below job 2, which arrived at 60.
  auto r = RunSim({{"gpu", 2}}, {J(1, 0, 2, 200), J(2, 60, 2, 10)}, "dlas-gpu(queue_limits=[100])");
  EXPECT_DOUBLE_EQ(r.jobs[1].first_start, 60);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_time, 70);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 210);
}

TEST(PolicyDlasGpu, StarvationPromotionRestoresAStarvedJob) {
  // A long job demoted to Q1 starves behind a stream of short Q0 jobs that keeps the GPU busy:
  // without promotion it waits from t=20 to the end of the stream; with it, it runs again
  // (more preemptions) while short jobs still arrive.
  std::vector<JobSpec> jobs = {J(1, 0, 1, 100)};
  for (int k = 0; k < 40; ++k) jobs.push_back(J(2 + k, 20 + 10 * k, 1, 10));
  auto off = RunSim({{"gpu", 1}}, jobs, "dlas-gpu(queue_limits=[10])");
  auto on = RunSim({{"gpu", 1}}, jobs, "dlas-gpu(queue_limits=[10], starvation_ratio=2)");
  EXPECT_EQ(off.jobs[0].preemptions, 1);
  EXPECT_GT(on.jobs[0].preemptions, 2);
  EXPECT_GT(on.summary.preemptions, off.summary.preemptions);
}

TEST(PolicyGittins, PrefersTheNewcomerOverAJobPastTheShortMode) {
  // Service distribution: 90% of jobs take 100 GPU-s, 10% take 10,000. A job that has run 150 s
  // is almost surely a long one (index ~1/9,850), a new job probably short (index ~1/1,090), so
  // Gittins preempts the old job; dlas-gpu's FIFO-within-queue keeps it running.
  std::vector<JobSpec> jobs = {J(1, 0, 1, 10000), J(2, 150, 1, 100)};
  std::string dist = "durations=[100,100,100,100,100,100,100,100,100,10000]";
  auto gittins = RunSim({{"gpu", 1}}, jobs, "gittins(queue_limits=[1000000], " + dist + ")");
  auto dlas = RunSim({{"gpu", 1}}, jobs, "dlas-gpu(queue_limits=[1000000])");
  EXPECT_DOUBLE_EQ(gittins.jobs[1].end_time, 250);
  EXPECT_EQ(gittins.jobs[0].preemptions, 1);
  EXPECT_DOUBLE_EQ(dlas.jobs[1].end_time, 10100);
}

TEST(PolicyLas, NewJobPreemptsTheOldOne) {
  auto r = RunSim({{"gpu", 1}}, {J(1, 0, 1, 100), J(2, 50, 1, 10)}, "las");
  EXPECT_DOUBLE_EQ(r.jobs[1].end_time, 60);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
}

TEST(PolicyHeteroLas, PicksFastestFreeModel) {
  Json cluster = Json::array({{{"name", "k80"}, {"count", 1}}, {{"name", "v100"}, {"count", 1}}});
  auto aware = RunSim(cluster, {J(1, 0, 1, 100, {0.25, 1.0})}, "hetero-las");
  EXPECT_DOUBLE_EQ(aware.jobs[0].end_time, 100);
  // The agnostic draw lands on either model (one free GPU each), depending on the seed.
  std::set<double> agnostic;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    SimOptions o;
    o.seed = seed;
    agnostic.insert(RunSim(cluster, {J(1, 0, 1, 100, {0.25, 1.0})}, "las", o).jobs[0].end_time);
  }
  EXPECT_EQ(agnostic, (std::set<double>{100, 400}));
}

TEST(PolicyHeteroLas, SwapsWhenTheGainIsPositive) {
  // Job 1 barely benefits from the v100 (0.9 vs 1.0); job 2 gains 4x. When job 2 arrives the only
  // free GPU is the k80, so the swap gives job 2 the v100 and moves job 1 (a migration).
  Json cluster = Json::array({{{"name", "k80"}, {"count", 1}}, {{"name", "v100"}, {"count", 1}}});
  std::vector<JobSpec> jobs = {J(1, 0, 1, 1000, {0.9, 1.0}), J(2, 10, 1, 100, {0.25, 1.0})};
  auto swap = RunSim(cluster, jobs, "hetero-las(priority_threshold_ratio=100, upgrade=false)");
  auto no_swap = RunSim(cluster, jobs, "hetero-las(priority_threshold_ratio=100, swap=false)");
  EXPECT_EQ(swap.jobs[0].migrations, 1);
  EXPECT_DOUBLE_EQ(swap.jobs[1].end_time, 110);
  // Job 1: 10 s on the v100, then 100 s on the k80 at 0.9 -> 900 s of work left at t=110.
  EXPECT_DOUBLE_EQ(swap.jobs[0].end_time, 110 + 900 / 0.9);
  // With upgrade (the default) it moves back to the v100 once job 2 frees it.
  auto upgrade = RunSim(cluster, jobs, "hetero-las(priority_threshold_ratio=100)");
  EXPECT_EQ(upgrade.jobs[0].migrations, 2);
  EXPECT_DOUBLE_EQ(upgrade.jobs[0].end_time, 110 + 900);
  EXPECT_EQ(no_swap.jobs[0].migrations, 0);
  EXPECT_DOUBLE_EQ(no_swap.jobs[1].end_time, 410);
  SimOptions o;
  o.restore_delay = 7;
  auto delayed = RunSim(cluster, jobs, "hetero-las(priority_threshold_ratio=100, upgrade=false)", o);
  EXPECT_GT(delayed.jobs[0].end_time, swap.jobs[0].end_time);
}

TEST(PolicyHeteroLas, DemotesTheHeavyJobForANewcomer) {
  // Two 1-GPU jobs on 1 GPU: the running one is far above the mean service once others run.
  Json cluster = {{"gpu", 2}};
  std::vector<JobSpec> jobs = {J(1, 0, 1, 1000), J(2, 0, 1, 1000), J(3, 500, 2, 10)};
  auto r = RunSim(cluster, jobs, "hetero-las(priority_threshold_ratio=0.5)");
  EXPECT_GE(r.jobs[0].preemptions + r.jobs[1].preemptions, 1);
  EXPECT_LT(r.jobs[2].end_time, 1000);
}

TEST(PolicyGavel, AwareBeatsAgnosticOnMixedCluster) {
  Json cluster = Json::array({{{"name", "k80"}, {"count", 2}}, {{"name", "v100"}, {"count", 2}}});
  std::vector<JobSpec> jobs;
  for (int k = 0; k < 8; ++k)
    jobs.push_back(J(k, 0, 1, 3600, k % 2 ? std::vector<double>{0.2, 1.0}
                                          : std::vector<double>{0.8, 1.0}));
  auto aware = RunSim(cluster, jobs, "gavel-maxmin");
  auto agnostic = RunSim(cluster, jobs, "gavel-maxmin(aware=false)");
  EXPECT_LT(aware.summary.makespan, agnostic.summary.makespan);
}

}  // namespace
}  // namespace gpufleet::sim
