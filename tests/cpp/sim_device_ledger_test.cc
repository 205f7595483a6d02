// The simulator's devices: starts become whole-GPU allocations in ClusterState on as few nodes as
// the free GPUs allow, placement never changes the timing, and nothing is left held at the end.
#include <gtest/gtest.h>

#include <random>

#include "gpufleet/sim/device_ledger.h"
#include "gpufleet/sim/simulator.h"

namespace gpufleet::sim {

using jobtime::GpuPool;
using jobtime::JobSpec;
using jobtime::JobTimePolicy;
namespace {

GpuPool LedgerPool(const Json& spec) { return GpuPool::FromJson(spec).value(); }

std::unique_ptr<DeviceLedger> Ledger(const GpuPool& pool, int jobs,
                                     const std::string& strategy = "binpack") {
  auto l = DeviceLedger::Create(pool, strategy, jobs);
  EXPECT_TRUE(l.ok()) << l.status();
  return std::move(l).value();
}

TEST(SimDeviceLedger, NodesAreCutFromEachModel) {
  GpuPool pool = LedgerPool(Json::array({{{"name", "v100"}, {"count", 10}, {"gpus_per_node", 4}},
                                   {{"name", "k80"}, {"count", 3}}}));
  auto l = Ledger(pool, 1);
  ASSERT_EQ(l->state(0).num_nodes(), 3);  // v100: 4 + 4 + 2
  ASSERT_EQ(l->state(1).num_nodes(), 1);  // k80: 3 (default 8 per node)
  EXPECT_EQ(l->state(0).node(2).devices.size(), 2u);
  EXPECT_EQ(l->state(1).node(0).devices[0].model, "k80");
  EXPECT_EQ(l->free_gpus(0), 10);
  EXPECT_EQ(l->free_gpus(1), 3);
}

TEST(SimDeviceLedger, StartsPackOntoOneNodeAndSplitOnlyWhenTheyMust) {
  GpuPool pool = LedgerPool(Json::array({{{"name", "v100"}, {"count", 8}, {"gpus_per_node", 4}}}));
  auto l = Ledger(pool, 3);
  EXPECT_EQ(l->Start(0, 3, 0).value(), 1);
  EXPECT_EQ(l->Start(1, 3, 0).value(), 1);  // binpack: the other node, the only one with room
  // One GPU free on each node: a 2-GPU job must span both.
  EXPECT_EQ(l->Start(2, 2, 0).value(), 2);
  EXPECT_EQ(l->free_gpus(0), 0);
  EXPECT_TRUE(l->state(0).CheckInvariants().ok());
  l->Stop(1);
  EXPECT_EQ(l->free_gpus(0), 3);
  EXPECT_EQ(l->num_allocations(), 3);  // job 0 (one pod) + job 2 (two pods)
  l->Stop(1);  // stopping again is harmless
  EXPECT_EQ(l->num_allocations(), 3);
}

TEST(SimDeviceLedger, TooFewFreeGpusIsAnErrorThatChangesNothing) {
  GpuPool pool = LedgerPool({{"v100", 4}});
  auto l = Ledger(pool, 2);
  ASSERT_TRUE(l->Start(0, 3, 0).ok());
  auto r = l->Start(1, 2, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1 free"), std::string::npos) << r.status();
  EXPECT_EQ(l->num_allocations(), 1);
  EXPECT_EQ(l->free_gpus(0), 1);
}

TEST(SimDeviceLedger, BadStrategyAndNodeSizeAreNamed) {
  GpuPool pool = LedgerPool({{"v100", 4}});
  auto bad = DeviceLedger::Create(pool, "no-such-strategy", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("simulate placement"), std::string::npos);
  auto zero = GpuPool::FromJson(Json::array({{{"name", "v100"}, {"count", 4},
                                              {"gpus_per_node", 0}}}));
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("gpus_per_node"), std::string::npos);
}

// Random traces on a two-model cluster of 4-GPU nodes: every policy gives the same times with
// and without devices, leaves no allocation behind, and multi-GPU jobs do end up spanning nodes.
TEST(SimDeviceLedger, DevicesNeverChangeTheTimingOfAnyPolicy) {
  GpuPool pool = LedgerPool(Json::array({{{"name", "v100"}, {"count", 12}, {"gpus_per_node", 4}},
                                   {{"name", "k80"}, {"count", 8}, {"gpus_per_node", 4}}}));
  std::mt19937 rng(11);
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 80; ++i) {
    JobSpec s;
    s.id = i;
    s.submit_time = (rng() % 4000);
    s.num_gpu = 1 << (rng() % 3);
    s.duration = 50 + rng() % 3000;
    s.speed = {1.0, 0.3 + (rng() % 5) / 10.0};
    jobs.push_back(s);
  }
  int64_t spanning = 0;
  const Registry<JobTimePolicy>& registry = Registry<JobTimePolicy>::Global();
  for (const std::string& name : Registry<jobtime::JobTimePolicy>::Global().Names()) {
    SCOPED_TRACE(name);
    const Json params = registry.Info(name)->ExampleParams();  // gittins' example distribution
    SimOptions counts, devices;
    counts.placement = "";
    devices.placement = "binpack";
    devices.restore_delay = counts.restore_delay = 5;
    auto p1 = registry.Create(name, params);
    auto p2 = registry.Create(name, params);
    ASSERT_TRUE(p1.ok() && p2.ok());
    auto a = Simulate(pool, jobs, **p1, counts);
    auto b = Simulate(pool, jobs, **p2, devices);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_EQ(a->jobs[i].end_time, b->jobs[i].end_time) << "job " << i;
      EXPECT_EQ(a->jobs[i].preemptions, b->jobs[i].preemptions) << "job " << i;
      EXPECT_EQ(a->jobs[i].max_nodes, 0);
      EXPECT_GE(b->jobs[i].max_nodes, 1);
    }
    EXPECT_EQ(b->leftover_allocations, 0);
    spanning += b->summary.jobs_spanning_nodes;
  }
  EXPECT_GT(spanning, 0) << "the trace should force some 2- and 4-GPU jobs across nodes";
}

}  // namespace
}  // namespace gpufleet::sim
