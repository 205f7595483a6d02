// The simulator mechanism: progress, events, preemption accounting, restore delay, validation.
#include <gtest/gtest.h>

#include "gpufleet/sim/simulator.h"

namespace gpufleet::sim {

using jobtime::Assignment;
using jobtime::CheckPlan;
using jobtime::GpuPool;
using jobtime::Job;
using jobtime::JobSpec;
using jobtime::JobState;
using jobtime::MakeJobTimePolicy;
namespace {

GpuPool Pool(const Json& spec) { return GpuPool::FromJson(spec).value(); }

JobSpec SimJob(int64_t id, double submit, int gpus, double duration, std::vector<double> speed = {}) {
  JobSpec s;
  s.id = id;
  s.submit_time = submit;
  s.num_gpu = gpus;
  s.duration = duration;
  s.speed = std::move(speed);
  return s;
}

SimResult RunSim(const GpuPool& pool, std::vector<JobSpec> jobs, const std::string& policy,
              SimOptions o = {}) {
  auto p = MakeJobTimePolicy(policy);
  EXPECT_TRUE(p.ok()) << p.status();
  auto r = Simulate(pool, std::move(jobs), **p, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return *std::move(r);
}

TEST(SimSimulator, FifoQueuesBehindBusyCluster) {
  GpuPool pool = Pool({{"v100", 4}});
  auto r = RunSim(pool, {SimJob(1, 0, 4, 100), SimJob(2, 10, 2, 50), SimJob(3, 20, 2, 30)}, "fifo");
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 100);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_time, 150);
  EXPECT_DOUBLE_EQ(r.jobs[2].end_time, 130);
  EXPECT_DOUBLE_EQ(r.jobs[1].queueing_delay, 90);
  EXPECT_DOUBLE_EQ(r.summary.makespan, 150);
  EXPECT_DOUBLE_EQ(r.summary.avg_jct, (100 + 140 + 110) / 3.0);
  // 4 GPUs busy 0-100, 4 busy 100-130, 2 busy 130-150 out of 4 x 150.
  EXPECT_NEAR(r.summary.gpu_utilization, (400 + 120 + 40) / 600.0, 1e-12);
}

TEST(SimSimulator, StrictFifoBlocksAndBackfillDoesNot) {
  GpuPool pool = Pool({{"v100", 4}});
  std::vector<JobSpec> jobs = {SimJob(1, 0, 2, 100), SimJob(2, 1, 4, 10), SimJob(3, 2, 2, 10)};
  auto strict = RunSim(pool, jobs, "fifo");
  auto backfill = RunSim(pool, jobs, "fifo(backfill=true)");
  EXPECT_DOUBLE_EQ(strict.jobs[2].first_start, 110);
  EXPECT_DOUBLE_EQ(backfill.jobs[2].first_start, 2);
}

TEST(SimSimulator, SpeedScalesRunTime) {
  GpuPool pool = Pool(Json::array({{{"name", "k80"}, {"count", 1}}}));
  auto r = RunSim(pool, {SimJob(1, 0, 1, 100, {0.25})}, "fifo");
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 400);
}

TEST(SimSimulator, PreemptionCountsAndRestoreDelay) {
  GpuPool pool = Pool({{"v100", 1}});
  std::vector<JobSpec> jobs = {SimJob(1, 0, 1, 100), SimJob(2, 10, 1, 20)};
  auto r = RunSim(pool, jobs, "srtf");
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_time, 30);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 120);
  SimOptions o;
  o.restore_delay = 5;
  auto delayed = RunSim(pool, jobs, "srtf", o);
  EXPECT_DOUBLE_EQ(delayed.jobs[0].end_time, 125);
  EXPECT_EQ(delayed.summary.preemptions, 1);
}

TEST(SimSimulator, TimeseriesTracksBusyGpus) {
  GpuPool pool = Pool({{"v100", 4}});
  auto r = RunSim(pool, {SimJob(1, 0, 4, 100), SimJob(2, 10, 2, 50)}, "fifo");
  ASSERT_GE(r.timeseries.size(), 3u);
  EXPECT_EQ(r.timeseries[0].busy_gpus, 4);
  EXPECT_EQ(r.timeseries[1].pending_jobs, 1);
  EXPECT_EQ(r.timeseries.back().busy_gpus, 0);
}

TEST(SimSimulator, RejectsJobsThatCanNeverRun) {
  GpuPool pool = Pool({{"v100", 4}, {"k80", 8}});
  auto p = MakeJobTimePolicy("fifo");
  ASSERT_TRUE(p.ok());
  auto r = Simulate(pool, {SimJob(7, 0, 16, 10)}, **p, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("job 7"), std::string::npos);
  EXPECT_FALSE(Simulate(pool, {SimJob(1, 0, 1, -5)}, **p, {}).ok());
  EXPECT_FALSE(Simulate(pool, {SimJob(1, 0, 1, 5, {1.0})}, **p, {}).ok());  // 1 speed, 2 models
  EXPECT_FALSE(Simulate(pool, {SimJob(1, 0, 1, 5, {0.0, 0.0})}, **p, {}).ok());
}

TEST(SimSimulator, PoolErrorsNameTheModel) {
  auto neg = GpuPool::FromJson({{"v100", -1}});
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("v100"), std::string::npos);
  EXPECT_FALSE(GpuPool::FromJson(Json::object()).ok());
  EXPECT_FALSE(GpuPool::FromJson({{"v100", {{"count", 2}, {"colour", "red"}}}}).ok());
  EXPECT_FALSE(GpuPool::FromJson("eight").ok());
}

TEST(SimSimulator, SchedulingIntervalDelaysStartsToTheGrid) {
  GpuPool pool = Pool({{"v100", 2}});
  std::vector<JobSpec> jobs = {SimJob(1, 0, 2, 95), SimJob(2, 7, 2, 10)};
  SimOptions o;
  o.scheduling_interval = 60;
  auto r = RunSim(pool, jobs, "fifo", o);
  EXPECT_DOUBLE_EQ(r.jobs[0].first_start, 0);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_time, 95);    // completions keep their exact time
  EXPECT_DOUBLE_EQ(r.jobs[1].first_start, 120);  // freed at 95, next point at 120
  EXPECT_EQ(r.scheduling_points, 3);  // 0 (arrival), 60 (arrival at 7), 120 (completion at 95)
  auto every_event = RunSim(pool, jobs, "fifo");
  EXPECT_DOUBLE_EQ(every_event.jobs[1].first_start, 95);
  // Busy GPU-seconds count the idle gap: 2 x 95 + 2 x 10 over 2 x 130.
  EXPECT_NEAR(r.summary.gpu_utilization, 210.0 / 260.0, 1e-12);
}

TEST(SimSimulator, PoolsPastTheGpuBoundAreRefused) {
  for (const Json& spec : {Json{{"v100", 100000000}}, Json{{"a", 2147483647}, {"b", 2147483647}},
                           Json{{"a", static_cast<int>(jobtime::kMaxPoolGpus)}, {"b", 1}}}) {
    auto pool = GpuPool::FromJson(spec);
    ASSERT_FALSE(pool.ok()) << spec;
    EXPECT_NE(pool.status().message().find("a simulated cluster may have"), std::string::npos)
        << pool.status();
  }
  EXPECT_EQ(Pool({{"v100", jobtime::kMaxPoolGpus}}).total_gpus(), jobtime::kMaxPoolGpus);
  // Create (the engine's pools) never sums past int.
  auto wide = GpuPool::Create({{"a", 2147483647}, {"b", 1}});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("GPUs in all"), std::string::npos) << wide.status();
}

TEST(SimSimulator, StepsBelowAMillisecondAreRefused) {
  GpuPool pool = Pool({{"v100", 2}});
  for (double step : {1e-300, 1e-9, 0.000999}) {
    for (bool tick : {true, false}) {
      SimOptions o;
      (tick ? o.tick : o.scheduling_interval) = step;
      auto policy = MakeJobTimePolicy("fifo");
      ASSERT_TRUE(policy.ok());
      auto r = Simulate(pool, {SimJob(1, 0, 1, 10)}, **policy, o);
      ASSERT_FALSE(r.ok()) << step;
      EXPECT_NE(r.status().message().find(tick ? "tick must be 0 (off) or at least 0.001"
                                               : "scheduling_interval must be 0 (off) or at"),
                std::string::npos)
          << r.status();
    }
  }
}

TEST(SimSimulator, TicksAreNotSteppedThroughIdleTime) {
  // Arrivals at Unix timestamps with a 1 ms tick: reaching 1.7e9 s by steps would take 1.7e12
  // of them; the first tick after an idle stretch is computed instead.
  GpuPool pool = Pool({{"v100", 2}});
  SimOptions o;
  o.tick = 0.001;
  o.record_timeseries = false;
  auto r = RunSim(pool, {SimJob(1, 1.7e9, 2, 10), SimJob(2, 1.7e9, 1, 10)}, "fifo", o);
  EXPECT_EQ(r.summary.num_jobs, 2);
  EXPECT_GE(r.jobs[1].first_start, r.jobs[0].end_time);
  EXPECT_LE(r.scheduling_points, 20002);  // a tick a millisecond while a job runs, no more
}

TEST(SimSimulator, Percentile) {
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({5, 1, 3}, 100), 5);
  EXPECT_DOUBLE_EQ(Percentile({5, 1, 3}, 0), 1);
}

// The plan checks shared by the simulator and the engine's jobtime action.
TEST(SimSimulator, CheckPlanRejectsBadPlansAndLeavesNothingMarked) {
  GpuPool pool = Pool(Json::array({{{"name", "v100"}, {"count", 2}}, {{"name", "k80"}, {"count", 2}}}));
  std::vector<Job> jobs(4);
  for (int i = 0; i < 4; ++i) {
    jobs[i].spec = SimJob(10 + i, 0, 2, 100, {1.0, i == 2 ? 0.0 : 0.5});
    jobs[i].state = JobState::kPending;
  }
  jobs[3].state = JobState::kDone;
  std::vector<int> busy = {0, 0}, planned(4, -1), used;
  auto label = [&](int i) { return "j" + std::to_string(jobs[i].spec.id); };
  auto check = [&](std::vector<Assignment> plan) {
    return CheckPlan(plan, jobs, pool, busy, false, label, &planned, &used);
  };
  EXPECT_TRUE(check({{0, 0}, {1, 1}}).ok());
  EXPECT_EQ(planned[0], 0);
  EXPECT_EQ(planned[1], 1);
  planned.assign(4, -1);
  struct Bad {
    std::vector<Assignment> plan;
    std::string says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{{0, 0}, {1, 0}}, "over-committed model v100 (4 of 2 GPUs)"},
           {{{0, 0}, {0, 1}}, "job j10 twice"},
           {{{2, 1}}, "job j12 twice or to a model it cannot run on (k80)"},
           {{{3, 0}}, "job j13, which is not active"},
           {{{0, 0}, {7, 0}}, "out-of-range assignment (job 7, model 0)"}}) {
    absl::Status s = check(bad.plan);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(bad.says), std::string::npos) << s.message();
    EXPECT_EQ(planned, std::vector<int>(4, -1)) << "an error leaves no job marked";
  }
  // A plan of changes: running jobs left out keep their GPUs.
  jobs[0].state = JobState::kRunning;
  jobs[0].model = 0;
  busy = {2, 0};
  EXPECT_FALSE(CheckPlan({{1, 0}}, jobs, pool, busy, true, label, &planned, &used).ok());
  planned.assign(4, -1);
  EXPECT_TRUE(CheckPlan({{1, 1}}, jobs, pool, busy, true, label, &planned, &used).ok());
  planned.assign(4, -1);
  // kStop gives a running job's GPUs back inside a plan of changes, and only there.
  EXPECT_TRUE(CheckPlan({{0, jobtime::kStop}, {1, 0}}, jobs, pool, busy, true, label, &planned,
                        &used).ok());
  EXPECT_EQ(planned[0], -1) << "a stopped job is not planned";
  planned.assign(4, -1);
  EXPECT_FALSE(CheckPlan({{0, jobtime::kStop}}, jobs, pool, busy, false, label, &planned, &used)
                   .ok());
  EXPECT_FALSE(CheckPlan({{1, jobtime::kStop}}, jobs, pool, busy, true, label, &planned, &used)
                   .ok()) << "job 1 is not running";
  EXPECT_EQ(planned, std::vector<int>(4, -1));
}

}  // namespace
}  // namespace gpufleet::sim
