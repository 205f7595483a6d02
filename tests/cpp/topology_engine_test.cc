// The engine places gangs by topology through the gang-topology plugin: a job with a required
// rack lands in one rack, one that no rack takes waits with a reason naming the level, and the
// reservation against starvation plans (and holds) inside one rack.
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"

namespace gpufleet::engine {
namespace {

Json Config(bool reservation) {
  Json tier2 = Json::array(
      {"drf", "predicates", "proportion",
       {{"name", "nodeorder"}, {"arguments", {{"binpack", 1}}}},
       {{"name", "deviceshare"}, {"arguments", {{"strategy", "binpack"}}}},
       {{"name", "gang-topology"},
        {"arguments", {{"levels", "block=topo/block, rack=topo/rack, host=kubernetes.io/hostname"}}}}});
  if (reservation) tier2.push_back({{"name", "reservation"}, {"arguments", {{"after_cycles", 1}}}});
  return {{"actions", "enqueue, allocate, backfill"},
          {"tiers", {{{"plugins", {"priority", "gang"}}}, {{"plugins", tier2}}}}};
}

// One block of two racks of two 8-GPU nodes.
Json Nodes() {
  Json nodes = Json::array();
  for (int r = 0; r < 2; ++r)
    for (int n = 0; n < 2; ++n) {
      const std::string name = absl::StrCat("r", r, "-n", n);
      nodes.push_back({{"name", name}, {"cpu", "64"}, {"memory", "512Gi"},
                       {"gpus", {{"count", 8}, {"model", "H100"}, {"memory", "80Gi"}}},
                       {"labels", {{"topo/block", "b0"}, {"topo/rack", absl::StrCat("r", r)},
                                   {"kubernetes.io/hostname", name}}}});
    }
  return nodes;
}

Json GpuJob(const std::string& name, int replicas, int gpus, int64_t creation, Json topology = nullptr) {
  Json j = {{"name", name}, {"replicas", replicas}, {"creation", creation},
            {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus}}}};
  if (!topology.is_null()) j["topology"] = topology;
  return j;
}

std::string RackOf(const std::string& node) { return node.substr(0, 2); }

class TopologyEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {}
  void Start(bool reservation) {
    ASSERT_TRUE(s_.Configure(Config(reservation)).ok());
    ASSERT_TRUE(LoadScenario({{"nodes", Nodes()}}, &s_).ok());
  }
  void Submit(const Json& job) { ASSERT_TRUE(LoadScenario({{"jobs", Json::array({job})}}, &s_).ok()) << job.dump(); }
  // Pins a 1-GPU (or k-GPU) task on a node by its own selector.
  void Pin(const std::string& name, const std::string& node, int gpus, int64_t creation) {
    Json j = GpuJob(name, 1, gpus, creation);
    j["node_selector"] = {{"kubernetes.io/hostname", node}};
    Submit(j);
  }
  std::set<std::string> NodesOf(const CycleResult& r, const std::string& job) {
    std::set<std::string> out;
    for (const BindDecision& b : r.binds)
      if (b.job == job) out.insert(b.allocation.node);
    return out;
  }
  Scheduler s_;
};

TEST_F(TopologyEngineTest, RequiredRackKeepsTheGangInOneRack) {
  Start(false);
  Pin("small", "r0-n0", 1, 1);
  ASSERT_TRUE(s_.RunCycle().ok());
  // Node by node, binpack would take r0-n1 and then a node of r1; the rack requirement keeps
  // both tasks in r1, the only rack with two free nodes.
  Submit(GpuJob("train", 2, 8, 2, {{"required", "rack"}}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  const std::set<std::string> nodes = NodesOf(*r, "train");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes, (std::set<std::string>{"r1-n0", "r1-n1"}));
}

TEST_F(TopologyEngineTest, NoRackTakesTheGangSoItWaitsNamingTheLevel) {
  Start(false);
  Submit(GpuJob("wide", 3, 8, 1, {{"required", "rack"}}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(NodesOf(*r, "wide").empty());
  ASSERT_TRUE(r->pending.count("wide"));
  EXPECT_NE(r->pending.at("wide").find("no rack domain takes the gang: 3 pods"), std::string::npos)
      << r->pending.at("wide");
  // Preferred instead: the block holds it.
  Submit(GpuJob("pref", 3, 8, 2, {{"preferred", "rack"}}));
  r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(NodesOf(*r, "pref").size(), 3u);
}

TEST_F(TopologyEngineTest, AnUnknownLevelIsAPendingReasonAndChangesNothing) {
  Start(false);
  Submit(GpuJob("odd", 1, 1, 1, {{"required", "spine"}}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  ASSERT_TRUE(r->pending.count("odd"));
  EXPECT_NE(r->pending.at("odd").find("unknown topology level spine (levels: block, rack, host)"),
            std::string::npos)
      << r->pending.at("odd");
  EXPECT_EQ(s_.cluster().num_allocations(), 0);
}

TEST_F(TopologyEngineTest, ABadTopologyFieldIsRejectedAtSubmission) {
  Start(false);
  Json j = GpuJob("typo", 1, 1, 1, {{"requird", "rack"}});
  EXPECT_FALSE(LoadScenario({{"jobs", Json::array({j})}}, &s_).ok());
  Json bad = Config(false);
  bad["tiers"][1]["plugins"][5]["arguments"]["levels"] = "rack";
  EXPECT_FALSE(s_.Configure(bad).ok());
}

TEST_F(TopologyEngineTest, TheReservationHoldsInsideOneRack) {
  Start(true);
  // Every node runs something; the cheapest two nodes to drain (r0-n0 and r1-n0, one GPU each)
  // lie in different racks. The rack requirement plans both tasks inside r0.
  Pin("a", "r0-n0", 1, 1);
  Pin("b", "r1-n0", 1, 2);
  Pin("c", "r0-n1", 4, 3);
  Pin("d", "r1-n1", 4, 4);
  ASSERT_TRUE(s_.RunCycle().ok());
  Submit(GpuJob("train", 2, 8, 10, {{"required", "rack"}}));
  std::string target;
  std::set<std::string> held;
  for (int c = 0; c < 4 && target.empty(); ++c) {
    absl::StatusOr<CycleResult> r = s_.RunCycle();
    ASSERT_TRUE(r.ok());
    target = r->target;
    for (const HeldCapacity& h : r->held) held.insert(h.node);
  }
  ASSERT_EQ(target, "train");
  ASSERT_FALSE(held.empty());
  std::set<std::string> racks;
  for (const std::string& n : held) racks.insert(RackOf(n));
  EXPECT_EQ(racks.size(), 1u) << "held on " << *held.begin() << " and " << *held.rbegin();
  // Once the rack's work drains, the gang starts there.
  ASSERT_TRUE(s_.DeleteJob("a").ok());
  ASSERT_TRUE(s_.DeleteJob("c").ok());
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(NodesOf(*r, "train"), (std::set<std::string>{"r0-n0", "r0-n1"}));
}

}  // namespace
}  // namespace gpufleet::engine
