// ModelChoice: the agnostic draw is proportional to free GPUs, reproducible from the seed, and
// blind to the order the cluster lists its models; aware ties are drawn the same way.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {
namespace {

GpuPool Pool(const std::vector<std::pair<std::string, int>>& models) {
  std::vector<GpuModel> v;
  for (const auto& [name, count] : models) v.push_back({.name = name, .count = count});
  return *GpuPool::Create(v);
}

// Model names chosen for `n` pending one-GPU jobs (each asked alone on a fresh filler), at one
// time and seed.
std::vector<std::string> Picks(const GpuPool& pool, int n, uint64_t seed, double now,
                               ModelChoice choice, std::vector<double> speed_by_name = {}) {
  std::vector<Job> jobs(n);
  for (Job& j : jobs) {
    j.state = JobState::kPending;
    if (!speed_by_name.empty()) {
      // speed_by_name lists speeds in name order; the pool may list models in any order.
      j.spec.speed.resize(pool.num_models());
      for (int k = 0; k < pool.num_models(); ++k)
        j.spec.speed[pool.name_order()[k]] = speed_by_name[k];
    }
  }
  std::vector<int> running, busy(pool.num_models(), 0);
  JobTimeView view{.jobs = &jobs, .pool = &pool, .running = &running, .busy = &busy, .now = now,
                   .seed = seed};
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::vector<Assignment> plan;
    Filler fill(view, &plan);
    int m = fill.PickModel(i, choice);
    out.push_back(m < 0 ? "" : pool.model(m).name);
  }
  return out;
}

TEST(ModelChoice, AgnosticIgnoresTheListingOrder) {
  GpuPool a = Pool({{"k80", 8}, {"p100", 4}, {"v100", 2}});
  GpuPool b = Pool({{"v100", 2}, {"k80", 8}, {"p100", 4}});
  for (uint64_t seed : {0, 1, 7}) {
    for (double now : {0.0, 12.5, 3600.0})
      EXPECT_EQ(Picks(a, 200, seed, now, ModelChoice::kAgnostic),
                Picks(b, 200, seed, now, ModelChoice::kAgnostic))
          << "seed " << seed << " now " << now;
  }
}

TEST(ModelChoice, AgnosticDrawsInProportionToFreeGpus) {
  GpuPool pool = Pool({{"v100", 10}, {"k80", 60}, {"p100", 30}});
  std::map<std::string, int> count;
  const int n = 20000;
  for (const std::string& m : Picks(pool, n, 3, 100.0, ModelChoice::kAgnostic)) ++count[m];
  EXPECT_NEAR(count["k80"] / double(n), 0.6, 0.02);
  EXPECT_NEAR(count["p100"] / double(n), 0.3, 0.02);
  EXPECT_NEAR(count["v100"] / double(n), 0.1, 0.02);
}

TEST(ModelChoice, AgnosticIsReproducibleAndSeeded) {
  GpuPool pool = Pool({{"k80", 4}, {"v100", 4}});
  auto first = Picks(pool, 100, 11, 5.0, ModelChoice::kAgnostic);
  EXPECT_EQ(first, Picks(pool, 100, 11, 5.0, ModelChoice::kAgnostic));
  EXPECT_NE(first, Picks(pool, 100, 12, 5.0, ModelChoice::kAgnostic));
  EXPECT_NE(first, Picks(pool, 100, 11, 6.0, ModelChoice::kAgnostic));
}

TEST(ModelChoice, OnlyModelsWithRoomAreDrawn) {
  GpuPool pool = Pool({{"k80", 1}, {"v100", 4}});
  std::vector<Job> jobs(1);
  jobs[0].state = JobState::kPending;
  jobs[0].spec.num_gpu = 2;  // fits only on the v100s
  std::vector<int> running, busy(2, 0);
  JobTimeView view{.jobs = &jobs, .pool = &pool, .running = &running, .busy = &busy};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    view.seed = seed;
    std::vector<Assignment> plan;
    Filler fill(view, &plan);
    EXPECT_EQ(fill.PickModel(0, ModelChoice::kAgnostic), pool.Find("v100"));
  }
  jobs[0].spec.num_gpu = 5;
  std::vector<Assignment> plan;
  Filler fill(view, &plan);
  EXPECT_EQ(fill.PickModel(0, ModelChoice::kAgnostic), -1);
}

TEST(ModelChoice, RunningJobKeepsItsModel) {
  GpuPool pool = Pool({{"k80", 4}, {"v100", 4}});
  std::vector<Job> jobs(1);
  jobs[0].state = JobState::kRunning;
  jobs[0].model = pool.Find("k80");
  std::vector<int> running = {0}, busy = {1, 0};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    JobTimeView view{.jobs = &jobs, .pool = &pool, .running = &running, .busy = &busy,
                     .seed = seed};
    std::vector<Assignment> plan;
    Filler fill(view, &plan);
    EXPECT_EQ(fill.PickModel(0, ModelChoice::kAgnostic), jobs[0].model);
  }
}

TEST(ModelChoice, FastestBreaksTiesByTheSameDrawNotTheListing) {
  // Speeds in name order k80, p100, v100: p100 and v100 tie as fastest.
  GpuPool a = Pool({{"k80", 4}, {"p100", 4}, {"v100", 4}});
  GpuPool b = Pool({{"v100", 4}, {"p100", 4}, {"k80", 4}});
  auto pa = Picks(a, 200, 5, 0.0, ModelChoice::kFastest, {0.5, 1.0, 1.0});
  EXPECT_EQ(pa, Picks(b, 200, 5, 0.0, ModelChoice::kFastest, {0.5, 1.0, 1.0}));
  std::map<std::string, int> count;
  for (const std::string& m : pa) ++count[m];
  EXPECT_EQ(count["k80"], 0);
  EXPECT_GT(count["p100"], 50);
  EXPECT_GT(count["v100"], 50);
  // A strict fastest model is always taken.
  for (const std::string& m : Picks(b, 50, 5, 0.0, ModelChoice::kFastest, {0.5, 0.9, 1.0}))
    EXPECT_EQ(m, "v100");
}

}  // namespace
}  // namespace gpufleet::jobtime
