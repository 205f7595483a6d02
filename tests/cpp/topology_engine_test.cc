// The engine places gangs by topology through the gang-topology plugin: a job with a required
// rack lands in one rack, one that no rack takes waits with a reason naming the level, and the
// reservation against starvation plans (and holds) inside one rack.
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

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

// Sub-groups: entries of a job's task list with `replicas` and their own `topology` are groups of
// the gang (a leader, workers), each under its own constraint inside the job's.

// Two blocks of two racks of two 8-GPU nodes: b<b>-r<r>-n<n>.
Json TwoBlocks() {
  Json nodes = Json::array();
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 2; ++r)
      for (int n = 0; n < 2; ++n) {
        const std::string rack = absl::StrCat("b", b, "-r", r);
        const std::string name = absl::StrCat(rack, "-n", n);
        nodes.push_back({{"name", name}, {"cpu", "64"}, {"memory", "512Gi"},
                         {"gpus", {{"count", 8}, {"model", "H100"}, {"memory", "80Gi"}}},
                         {"labels", {{"topo/block", absl::StrCat("b", b)}, {"topo/rack", rack},
                                     {"kubernetes.io/hostname", name}}}});
      }
  return nodes;
}

// A task-list entry: `replicas` pods of `gpus` GPUs each, with an optional topology.
Json TaskEntry(const std::string& name, int replicas, int gpus, Json topology = nullptr) {
  Json e = {{"name", name}, {"replicas", replicas},
            {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus}}}};
  if (!topology.is_null()) e["topology"] = topology;
  return e;
}

// The entries are a vector, not a Json: a braced list of one Json is a copy of it under clang
// and a one-element array under gcc.
Json GroupJob(const std::string& name, int64_t creation, std::vector<Json> tasks,
              Json topology = nullptr) {
  Json j = {{"name", name}, {"creation", creation}, {"tasks", Json(std::move(tasks))}};
  if (!topology.is_null()) j["topology"] = topology;
  return j;
}

// Node per bound task of `job`.
std::map<std::string, std::string> TaskNodes(const CycleResult& r, const std::string& job) {
  std::map<std::string, std::string> out;
  for (const BindDecision& b : r.binds)
    if (b.job == job) out[b.task] = b.allocation.node;
  return out;
}

// Pods per node of the tasks whose names start with `prefix`.
std::map<std::string, int> PodsPerNode(const std::map<std::string, std::string>& nodes,
                                       const std::string& prefix) {
  std::map<std::string, int> out;
  for (const auto& [task, node] : nodes)
    if (task.rfind(prefix, 0) == 0) ++out[node];
  return out;
}

TEST_F(TopologyEngineTest, LeaderOnOneHostWorkersInOneRackInsideTheJobsBlock) {
  ASSERT_TRUE(s_.Configure(Config(false)).ok());
  ASSERT_TRUE(LoadScenario({{"nodes", TwoBlocks()}}, &s_).ok());
  // Block b0 keeps no rack with two free nodes; in b1, b1-r0-n0 has 4 GPUs free and b1-r1 is
  // empty.
  Pin("p0", "b0-r0-n0", 4, 1);
  Pin("p1", "b0-r1-n0", 4, 2);
  Pin("p2", "b1-r0-n0", 4, 3);
  ASSERT_TRUE(s_.RunCycle().ok());
  Submit(GroupJob("train", 10,
                  {TaskEntry("leader", 2, 1, {{"required", "host"}}),
                   TaskEntry("worker", 2, 8, {{"required", "rack"}})},
                  {{"required", "block"}}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  const std::map<std::string, std::string> nodes = TaskNodes(*r, "train");
  ASSERT_EQ(nodes.size(), 4u) << (r->pending.count("train") ? r->pending.at("train") : "");
  // The leader's two pods share the tightest host of b1, the workers fill the empty rack.
  EXPECT_EQ(PodsPerNode(nodes, "leader"), (std::map<std::string, int>{{"b1-r0-n0", 2}}));
  EXPECT_EQ(PodsPerNode(nodes, "worker"),
            (std::map<std::string, int>{{"b1-r1-n0", 1}, {"b1-r1-n1", 1}}));
}

TEST_F(TopologyEngineTest, SlicesPerGroupKeepEachPairOnOneHost) {
  Start(false);
  // r0-n0 and r1-n0 keep 7 GPUs free: one 4-GPU pod each, never a pair.
  Pin("p0", "r0-n0", 1, 1);
  Pin("p1", "r1-n0", 1, 2);
  ASSERT_TRUE(s_.RunCycle().ok());
  Submit(GroupJob("train", 10,
                  {TaskEntry("leader", 1, 1),
                   TaskEntry("worker", 4, 4, {{"slice_level", "host"}, {"slice_size", 2}})}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  const std::map<std::string, std::string> nodes = TaskNodes(*r, "train");
  ASSERT_EQ(nodes.size(), 5u) << (r->pending.count("train") ? r->pending.at("train") : "");
  EXPECT_EQ(PodsPerNode(nodes, "worker"),
            (std::map<std::string, int>{{"r0-n1", 2}, {"r1-n1", 2}}));
}

TEST_F(TopologyEngineTest, BalancedPerGroupSplitsTheWorkersEvenlyOverRacks) {
  // Each rack takes three 4-GPU pods (one node half used): four workers need both racks, best
  // fit splits them 3 and 1, balanced 2 and 2. The leader asks for no GPUs, so takes none.
  for (bool balanced : {false, true}) {
    Scheduler s;
    ASSERT_TRUE(s.Configure(Config(false)).ok());
    ASSERT_TRUE(LoadScenario({{"nodes", Nodes()}}, &s).ok());
    for (const char* node : {"r0-n0", "r1-n0"}) {
      Json pin = GpuJob(absl::StrCat("pin-", node), 1, 4, 1);
      pin["node_selector"] = {{"kubernetes.io/hostname", node}};
      ASSERT_TRUE(LoadScenario({{"jobs", Json::array({pin})}}, &s).ok());
    }
    ASSERT_TRUE(s.RunCycle().ok());
    Json leader = {{"name", "leader"}, {"requests", {{"cpu", "1"}}}};
    Json worker = TaskEntry("worker", 4, 4, {{"required", "block"}, {"balanced", balanced}});
    ASSERT_TRUE(LoadScenario({{"jobs", Json::array({GroupJob("train", 10, {leader, worker})})}}, &s).ok());
    absl::StatusOr<CycleResult> r = s.RunCycle();
    ASSERT_TRUE(r.ok());
    const std::map<std::string, std::string> nodes = TaskNodes(*r, "train");
    ASSERT_EQ(nodes.size(), 5u) << (r->pending.count("train") ? r->pending.at("train") : "");
    std::map<std::string, int> per_rack;
    for (const auto& [node, pods] : PodsPerNode(nodes, "worker")) per_rack[RackOf(node)] += pods;
    std::vector<int> split;
    for (const auto& [rack, pods] : per_rack) split.push_back(pods);
    std::sort(split.begin(), split.end());
    EXPECT_EQ(split, balanced ? (std::vector<int>{2, 2}) : (std::vector<int>{1, 3}))
        << "balanced " << balanced;
  }
}

TEST_F(TopologyEngineTest, ALeaderAndWorkersWithEqualRequestsAreTwoGroups) {
  Start(false);
  Pin("p0", "r0-n0", 4, 1);
  ASSERT_TRUE(s_.RunCycle().ok());
  // As one group of three 4-GPU pods no host would take them; the workers alone fit one host,
  // and the leader goes where it fits best.
  Submit(GroupJob("train", 10, {TaskEntry("leader", 1, 4),
                                TaskEntry("worker", 2, 4, {{"required", "host"}})}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  const std::map<std::string, std::string> nodes = TaskNodes(*r, "train");
  ASSERT_EQ(nodes.size(), 3u) << (r->pending.count("train") ? r->pending.at("train") : "");
  EXPECT_EQ(PodsPerNode(nodes, "worker").size(), 1u);
  EXPECT_EQ(nodes.at("leader-0"), "r0-n0");
}

TEST_F(TopologyEngineTest, BadTaskTopologyNamesTheJobAndTaskAndChangesNothing) {
  Start(false);
  // An unknown level is known only against the session's topology: the job waits, saying so.
  Submit(GroupJob("odd", 1, {TaskEntry("leader", 1, 1),
                             TaskEntry("worker", 2, 1, {{"required", "spine"}})}));
  absl::StatusOr<CycleResult> r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  ASSERT_TRUE(r->pending.count("odd"));
  EXPECT_NE(r->pending.at("odd").find("gang odd group worker: unknown topology level spine"),
            std::string::npos)
      << r->pending.at("odd");
  EXPECT_EQ(s_.cluster().num_allocations(), 0);
  // A slice size that does not divide the task's replicas is refused at submission.
  Json bad = GroupJob("split", 2, {TaskEntry("worker", 3, 1, {{"slice_level", "host"}, {"slice_size", 2}})});
  absl::Status st = LoadScenario({{"jobs", Json::array({bad})}}, &s_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("job split task worker: topology.slice_size: 2 does not divide the "
                              "task's 3 replicas"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(std::string(st.message()).find('\n'), std::string::npos);
  r = s_.RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pending.count("split"));
  EXPECT_EQ(s_.cluster().num_allocations(), 0);
}

}  // namespace
}  // namespace gpufleet::engine
