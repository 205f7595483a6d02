// The simulator with racks: its device ledger places a job spanning nodes as a gang that prefers
// one rack (the same gang placer as the engine and the extender), and a trace simulated with racks
// runs on the same timing as without.
#include <gtest/gtest.h>

#include <set>

#include "absl/strings/str_cat.h"

#include "gpufleet/sim/device_ledger.h"
#include "gpufleet/sim/simulator.h"

namespace gpufleet::sim {
namespace {

using jobtime::GpuPool;

// The rack of each node a job's pods hold ("r0", "r1", ...).
std::set<std::string> RacksOf(const DeviceLedger& l, int job) {
  std::set<std::string> racks;
  const ClusterState& s = l.state(0);
  for (const Allocation* a : s.Allocations())
    if (a->pod.rfind(absl::StrCat(job, "."), 0) == 0)
      racks.insert(s.node(s.FindNode(a->node)).labels.at("gpufleet.sim/rack"));
  return racks;
}

TEST(TopologySimTest, AJobSpanningNodesStaysInOneRackWhenOneHasRoom) {
  // Four 8-GPU nodes, two to a rack.
  GpuPool pool = GpuPool::FromJson(Json::array({{{"name", "h100"}, {"count", 32}, {"gpus_per_node", 8}}})).value();
  for (bool racks : {false, true}) {
    auto made = DeviceLedger::Create(pool, "binpack", 3, racks ? RackLayout{2, 0} : RackLayout{});
    ASSERT_TRUE(made.ok()) << made.status();
    DeviceLedger& l = **made;
    // Two 4-GPU jobs fill node 0 (rack r0); 16 GPUs then fit rack r1 whole, while the freest
    // nodes in node order are node 1 (r0) and node 2 (r1).
    ASSERT_TRUE(l.Start(0, 4, 0).ok());
    ASSERT_TRUE(l.Start(1, 4, 0).ok());
    ASSERT_TRUE(l.Start(2, 16, 0).ok());
    if (racks) {
      EXPECT_EQ(RacksOf(l, 2), (std::set<std::string>{"r1"}));
    } else {
      EXPECT_EQ(l.state(0).num_nodes(), 4);
      EXPECT_TRUE(l.state(0).node(0).labels.empty());
    }
    EXPECT_EQ(l.free_gpus(0), 8);
    l.Stop(2);
    EXPECT_EQ(l.free_gpus(0), 24);
    EXPECT_TRUE(l.state(0).CheckInvariants().ok());
  }
  EXPECT_FALSE(DeviceLedger::Create(pool, "binpack", 1, RackLayout{-1, 0}).ok());
}

TEST(TopologySimTest, RacksChangeWhereJobsRunNeverWhen) {
  GpuPool pool = GpuPool::FromJson(Json::array({{{"name", "h100"}, {"count", 64}, {"gpus_per_node", 8}}})).value();
  std::vector<jobtime::JobSpec> jobs;
  for (int i = 0; i < 40; ++i) {
    jobtime::JobSpec j;
    j.id = i;
    j.submit_time = i * 30.0;
    j.num_gpu = (i % 5 == 0) ? 16 : (i % 3 == 0 ? 8 : 1 + i % 4);
    j.duration = 600.0 + 37.0 * (i % 7);
    jobs.push_back(j);
  }
  std::vector<double> finish[2];
  for (int racks = 0; racks < 2; ++racks) {
    auto policy = jobtime::MakeJobTimePolicy("fifo");
    ASSERT_TRUE(policy.ok());
    SimOptions o;
    if (racks) {
      o.nodes_per_rack = 2;
      o.racks_per_block = 2;
    }
    auto r = Simulate(pool, jobs, **policy, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->leftover_allocations, 0);
    for (const auto& j : r->jobs) finish[racks].push_back(j.end_time);
  }
  EXPECT_EQ(finish[0], finish[1]);
}

}  // namespace
}  // namespace gpufleet::sim
