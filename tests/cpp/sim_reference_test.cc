// The incremental least-attained-service policies against the straightforward ones they replaced
// (tests/cpp/reference/): on random seeded traces and clusters both must take the same decisions,
// so every job starts, stops, moves and ends at the same times.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "gpufleet/sim/simulator.h"
#include "reference/hetero_las_reference.h"
#include "reference/las_reference.h"

namespace gpufleet::sim {
namespace {

using jobtime::GpuModel;
using jobtime::GpuPool;
using jobtime::JobSpec;
using jobtime::JobTimePolicy;

struct Case {
  GpuPool pool;
  std::vector<JobSpec> jobs;
};

// A few hundred jobs with Poisson arrivals at about the cluster's capacity (queues form and drain),
// 1-8 GPUs, lognormal durations, per-kind speeds on 1-3 models (a kind may not run on a model, a
// model may have a memory limit).
Case RandomCase(uint64_t seed, int num_models) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> count(6, 20);
  std::vector<GpuModel> models;
  const char* names[] = {"k80", "p100", "v100"};
  for (int m = 0; m < num_models; ++m) {
    GpuModel g;
    g.name = names[m];
    g.count = count(rng) + (m == num_models - 1 ? 8 : 0);  // one model holds every gang
    g.perf_factor = 0.3 + 0.35 * m;
    g.memory_gib = (m == 0 && m != num_models - 1 && seed % 2 == 0) ? 12 : 0;
    models.push_back(g);
  }
  Case c{GpuPool::Create(models).value(), {}};
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<std::vector<double>> kinds(5);
  for (auto& k : kinds)
    for (int m = 0; m < num_models; ++m)
      k.push_back(m == num_models - 1 ? 1.0 : (unit(rng) < 0.1 ? 0.0 : 0.2 + 0.7 * unit(rng)));
  std::lognormal_distribution<double> duration(std::log(600.0), 1.3);
  std::discrete_distribution<int> gpus({0.55, 0.2, 0.15, 0.1});
  const int sizes[] = {1, 2, 4, 8};
  const int n = 150 + static_cast<int>(seed % 7) * 20;
  const double total = c.pool.total_gpus();
  std::exponential_distribution<double> gap(total / (2.4 * 600 * 2.0));
  double t = 0;
  for (int i = 0; i < n; ++i) {
    JobSpec s;
    s.id = i;
    s.submit_time = std::floor(t);  // whole seconds: simultaneous arrivals and equal keys happen
    s.num_gpu = sizes[gpus(rng)];
    s.duration = std::max(1.0, std::round(duration(rng)));
    if (num_models > 1) s.speed = kinds[rng() % kinds.size()];
    s.memory_gib = unit(rng) < 0.2 ? 16 : 0;
    c.jobs.push_back(s);
    t += gap(rng);
  }
  return c;
}

void ExpectSameRun(const Case& c, JobTimePolicy& fast, JobTimePolicy& reference,
                   const SimOptions& o, const std::string& what) {
  SCOPED_TRACE(what);
  auto a = Simulate(c.pool, c.jobs, fast, o);
  auto b = Simulate(c.pool, c.jobs, reference, o);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->jobs.size(), b->jobs.size());
  EXPECT_EQ(a->scheduling_points, b->scheduling_points);
  for (size_t i = 0; i < a->jobs.size(); ++i) {
    const jobtime::Job& x = a->jobs[i];
    const jobtime::Job& y = b->jobs[i];
    ASSERT_EQ(x.first_start, y.first_start) << "job " << i;
    ASSERT_EQ(x.end_time, y.end_time) << "job " << i;
    ASSERT_EQ(x.preemptions, y.preemptions) << "job " << i;
    ASSERT_EQ(x.migrations, y.migrations) << "job " << i;
    ASSERT_EQ(x.queueing_delay, y.queueing_delay) << "job " << i;
    ASSERT_EQ(x.service, y.service) << "job " << i;
  }
  EXPECT_EQ(a->summary.avg_jct, b->summary.avg_jct);
  ASSERT_EQ(a->timeseries.size(), b->timeseries.size());
  for (size_t k = 0; k < a->timeseries.size(); ++k) {
    ASSERT_EQ(a->timeseries[k].time, b->timeseries[k].time);
    ASSERT_EQ(a->timeseries[k].busy_gpus, b->timeseries[k].busy_gpus);
    ASSERT_EQ(a->timeseries[k].running_jobs, b->timeseries[k].running_jobs);
  }
}

struct HeteroParams {
  double priority, starve;
  bool swap, aware, upgrade;
};

TEST(SimReference, HeteroLasTakesTheReferenceDecisions) {
  const HeteroParams params[] = {{2.0, 4.0, true, true, true},   {1.2, 2.0, true, true, true},
                                 {2.0, 4.0, false, true, true},  {2.0, 4.0, true, true, false},
                                 {1.5, 3.0, true, false, true}};
  int64_t moved = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (int models : {1, 3}) {
      Case c = RandomCase(seed, models);
      for (const HeteroParams& p : params) {
        SimOptions o;
        o.placement = seed % 4 == 0 ? "binpack" : "";
        o.restore_delay = seed % 2 == 0 ? 30 : 0;
        auto fast = jobtime::MakeJobTimePolicy(
            "hetero-las(priority_threshold_ratio=" + std::to_string(p.priority) +
            ", starve_threshold_ratio=" + std::to_string(p.starve) +
            ", swap=" + (p.swap ? "true" : "false") + ", aware=" + (p.aware ? "true" : "false") +
            ", upgrade=" + (p.upgrade ? "true" : "false") + ")");
        ASSERT_TRUE(fast.ok()) << fast.status();
        jobtime::reference::HeteroLasReference reference(p.priority, p.starve, p.swap, p.aware,
                                                         p.upgrade);
        ExpectSameRun(c, **fast, reference, o,
                      "seed " + std::to_string(seed) + ", " + std::to_string(models) +
                          " models, ratios " + std::to_string(p.priority) + "/" +
                          std::to_string(p.starve));
        if (HasFatalFailure()) return;
        auto again = Simulate(c.pool, c.jobs, reference, o);
        for (const jobtime::Job& j : again->jobs) moved += j.preemptions + j.migrations;
      }
    }
  }
  EXPECT_GT(moved, 0) << "the traces never preempt or migrate: they test nothing";
}

// 2,500 jobs arriving at `rate` per second: 1-8 GPUs, lognormal durations, whole seconds when
// `whole` (equal keys happen) and fractional otherwise; with `kinds`, four in five jobs take a
// kind's per-model speeds and the rest none (every model ties).
std::vector<JobSpec> LargeStream(std::mt19937_64& rng, double rate, bool whole,
                                 const std::vector<std::vector<double>>* kinds = nullptr) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::lognormal_distribution<double> duration(std::log(600.0), 1.3);
  std::discrete_distribution<int> gpus({0.55, 0.2, 0.15, 0.1});
  const int sizes[] = {1, 2, 4, 8};
  std::exponential_distribution<double> gap(rate);
  std::vector<JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < 2500; ++i) {
    JobSpec s;
    s.id = i;
    s.submit_time = whole ? std::floor(t) : t;
    s.num_gpu = sizes[gpus(rng)];
    s.duration = whole ? std::max(1.0, std::round(duration(rng))) : duration(rng) + 1;
    if (kinds != nullptr && unit(rng) < 0.8) s.speed = (*kinds)[rng() % kinds->size()];
    jobs.push_back(s);
    t += gap(rng);
  }
  return jobs;
}

// Many running jobs per model and GPU count (so classes hold long runs, tails and near-tied keys),
// some jobs without per-model speeds (models tie and are drawn by their free GPUs), whole and
// fractional times.
TEST(SimReference, HeteroLasTakesTheReferenceDecisionsOnALargeCluster) {
  int64_t moved = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<GpuModel> models;
    const char* names[] = {"k80", "p100", "v100"};
    for (int m = 0; m < 3; ++m) {
      GpuModel g;
      g.name = names[m];
      g.count = 40 + 16 * m + static_cast<int>(seed) * 8;
      g.perf_factor = 0.25 + 0.375 * m;
      models.push_back(g);
    }
    Case c{GpuPool::Create(models).value(), {}};
    std::uniform_real_distribution<double> unit(0, 1);
    std::vector<std::vector<double>> kinds(6);
    for (auto& k : kinds)
      for (int m = 0; m < 3; ++m) k.push_back((0.25 + 0.375 * m) * (0.7 + 0.6 * unit(rng)));
    c.jobs = LargeStream(rng, c.pool.total_gpus() / (2.4 * 600 * 2.0 * 1.05), seed % 2 == 1,
                         &kinds);
    for (const HeteroParams& p : {HeteroParams{2.0, 4.0, true, true, true},
                                  HeteroParams{1.2, 2.0, true, true, true}}) {
      SimOptions o;
      o.placement = seed == 2 ? "binpack" : "";
      o.restore_delay = seed >= 3 ? 30 : 0;
      o.seed = seed;
      auto fast = jobtime::MakeJobTimePolicy(
          "hetero-las(priority_threshold_ratio=" + std::to_string(p.priority) +
          ", starve_threshold_ratio=" + std::to_string(p.starve) + ")");
      ASSERT_TRUE(fast.ok()) << fast.status();
      jobtime::reference::HeteroLasReference reference(p.priority, p.starve, p.swap, p.aware,
                                                       p.upgrade);
      ExpectSameRun(c, **fast, reference, o,
                    "seed " + std::to_string(seed) + ", ratios " + std::to_string(p.priority));
      if (HasFatalFailure()) return;
      auto again = Simulate(c.pool, c.jobs, reference, o);
      for (const jobtime::Job& j : again->jobs) moved += j.preemptions + j.migrations;
    }
  }
  EXPECT_GT(moved, 1000) << "the traces rarely preempt or migrate: they test little";
}

TEST(SimReference, LasTakesTheReferenceDecisions) {
  int64_t preempted = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (int models : {1, 3}) {
      Case c = RandomCase(seed, models);
      for (bool gputime : {true, false}) {
        for (bool compat : {false, true}) {
          SimOptions o;
          o.placement = seed % 4 == 0 ? "binpack" : "";
          o.restore_delay = seed % 2 == 0 ? 30 : 0;
          o.tiresias_compat = compat;
          auto fast = jobtime::MakeJobTimePolicy(gputime ? "las" : "las(service=time)");
          ASSERT_TRUE(fast.ok()) << fast.status();
          jobtime::reference::LasReference reference(gputime);
          ExpectSameRun(c, **fast, reference, o,
                        "seed " + std::to_string(seed) + ", " + std::to_string(models) +
                            " models, gputime " + std::to_string(gputime) + ", compat " +
                            std::to_string(compat));
          if (HasFatalFailure()) return;
          auto again = Simulate(c.pool, c.jobs, reference, o);
          for (const jobtime::Job& j : again->jobs) preempted += j.preemptions;
        }
      }
    }
  }
  EXPECT_GT(preempted, 0) << "the traces never preempt: they test nothing";
}

// One model with a few hundred GPUs and thousands of jobs near capacity: long queues and many
// preemptions per point, where las reads only the tail of its running order. Times are whole
// seconds in half the cases and arbitrary doubles in the others.
TEST(SimReference, LasTakesTheReferenceDecisionsOnALargeCluster) {
  int64_t preempted = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    GpuModel g;
    g.name = "v100";
    g.count = 96 + static_cast<int>(seed) * 40;
    Case c{GpuPool::Create({g}).value(), {}};
    c.jobs = LargeStream(rng, g.count / (2.4 * 600 * 2.0 * 1.02), seed % 2 == 1);
    for (bool gputime : {true, false}) {
      SimOptions o;
      o.placement = seed == 2 ? "binpack" : "";
      o.restore_delay = seed >= 3 ? 30 : 0;
      auto fast = jobtime::MakeJobTimePolicy(gputime ? "las" : "las(service=time)");
      ASSERT_TRUE(fast.ok()) << fast.status();
      jobtime::reference::LasReference reference(gputime);
      ExpectSameRun(c, **fast, reference, o,
                    "seed " + std::to_string(seed) + ", gputime " + std::to_string(gputime));
      if (HasFatalFailure()) return;
      auto again = Simulate(c.pool, c.jobs, reference, o);
      for (const jobtime::Job& j : again->jobs) preempted += j.preemptions;
    }
  }
  EXPECT_GT(preempted, 1000) << "the traces rarely preempt: they test little";
}

}  // namespace
}  // namespace gpufleet::sim
