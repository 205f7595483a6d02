// Scenario tables in the style of Volcano's uthelper: nodes, queues and jobs in, expected binds,
// evictions and pending reasons out. Includes the seed scenarios and kube-batch issues 729 / 561.
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"

namespace gpufleet::engine {
namespace {

Json GpuNode(const std::string& name, int gpus, const std::string& cpu = "64",
             Json extra = Json::object()) {
  Json n = {{"name", name}, {"cpu", cpu}, {"memory", "512Gi"},
            {"gpus", {{"count", gpus}, {"model", "A100"}, {"memory", "80Gi"}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) n[it.key()] = *it;
  return n;
}

Json GangJob(const std::string& name, int replicas, int gpus_each, const std::string& queue = "default",
             int priority = 0, Json extra = Json::object()) {
  Json j = {{"name", name}, {"queue", queue}, {"priority", priority}, {"replicas", replicas},
            {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus_each}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = *it;
  return j;
}

std::unique_ptr<Scheduler> Make(const Json& scenario, const Json& config = Json()) {
  auto s = std::make_unique<Scheduler>();
  if (!config.is_null()) {
    absl::Status c = s->Configure(config);
    EXPECT_TRUE(c.ok()) << c;
  }
  absl::Status st = LoadScenario(scenario, s.get());
  EXPECT_TRUE(st.ok()) << st;
  return s;
}

std::map<std::string, int> BindsPerJob(const CycleResult& r) {
  std::map<std::string, int> out;
  for (const auto& b : r.binds) ++out[b.job];
  return out;
}

std::map<std::string, int> EvictionsPerJob(const CycleResult& r) {
  std::map<std::string, int> out;
  for (const auto& e : r.evictions) ++out[e.job];
  return out;
}

Json Config(const std::string& actions, Json tier2_extra = Json::array(),
            Json tier1 = Json::array({"priority", "gang"})) {
  Json tier2 = Json::array({"drf", "predicates", "proportion", "nodeorder", "deviceshare"});
  for (const auto& e : tier2_extra) tier2.push_back(e);
  return {{"actions", actions}, {"tiers", {{{"plugins", tier1}}, {{"plugins", tier2}}}}};
}

TEST(EngineScenarioTest, SeedGangLargerThanRoomStartsNothing) {
  // 10 workers, 10 GPUs of which another job holds one: room for 9. None starts; the reason says
  // why. The cluster is not changed.
  Json scenario = {{"nodes", {GpuNode("n1", 8), GpuNode("n2", 2)}},
                   {"jobs", {GangJob("holder", 1, 1, "default", 0, {{"running", {"n2"}}}),
                             GangJob("big", 10, 1)}}};
  auto s = Make(scenario);
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->binds.empty());
  ASSERT_TRUE(r->pending.count("big"));
  EXPECT_NE(r->pending.at("big").find("gang: 9/10 tasks could run, min_available 10; task big-9: "
                                      "0/2 nodes are available"),
            std::string::npos) << r->pending.at("big");
  EXPECT_EQ(s->cluster().num_allocations(), 1);
  // With fewer GPUs than the gang in the whole cluster, enqueue does not even admit it.
  auto tiny = Make({{"nodes", {GpuNode("n1", 8), GpuNode("n2", 1)}}, {"jobs", {GangJob("big", 10, 1)}}});
  r = tiny->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  EXPECT_NE(r->pending.at("big").find("not admitted: its minimum"), std::string::npos);
}

TEST(EngineScenarioTest, SeedTwoGangsForRoomOfOneNoSplit) {
  // Two 10-worker jobs, room for 10: one runs fully, the other waits (no 5/5 deadlock).
  auto s = Make({{"nodes", {GpuNode("n1", 5), GpuNode("n2", 5)}},
                 {"jobs", {GangJob("a", 10, 1), GangJob("b", 10, 1)}}});
  for (int cycle = 0; cycle < 3; ++cycle) {
    auto r = s->RunCycle();
    ASSERT_TRUE(r.ok()) << r.status();
    if (cycle == 0) {
      EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"a", 10}}));
      EXPECT_TRUE(r->pending.count("b"));
    } else {
      EXPECT_TRUE(r->binds.empty());
    }
  }
  auto jobs = s->Jobs();
  EXPECT_EQ(jobs[0].running, 10);
  EXPECT_EQ(jobs[1].running, 0);
}

TEST(EngineScenarioTest, GangWithMinAvailableBelowSize) {
  // min_available 4 of 6 on room for 5: 5 run (elastic beyond the minimum).
  auto s = Make({{"nodes", {GpuNode("n1", 5)}},
                 {"jobs", {GangJob("elastic", 6, 1, "default", 0, {{"min_available", 4}})}}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"elastic", 5}}));
}

TEST(EngineScenarioTest, WithoutGangPluginTasksPlaceOneByOne) {
  // Gang is policy: a configuration without it places what fits, and the cycle still succeeds.
  Json conf = {{"actions", "allocate"}, {"tiers", {{{"plugins", {"priority", "predicates", "nodeorder"}}}}}};
  auto s = Make({{"nodes", {GpuNode("n1", 2)}}, {"jobs", {GangJob("j", 4, 1)}}}, conf);
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"j", 2}}));
  EXPECT_NE(r->pending.at("j").find("2 tasks running; more wait"), std::string::npos) << r->pending.at("j");
}

TEST(EngineScenarioTest, InvalidGangIsReported) {
  auto s = Make({{"nodes", {GpuNode("n1", 8)}},
                 {"jobs", {GangJob("short", 2, 1, "default", 0, {{"min_available", 3}})}}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  EXPECT_NE(r->pending.at("short").find("invalid"), std::string::npos);
}

TEST(EngineScenarioTest, PriorityOrdersJobs) {
  auto s = Make({{"nodes", {GpuNode("n1", 4)}},
                 {"jobs", {GangJob("low", 4, 1, "default", 1), GangJob("high", 4, 1, "default", 9)}}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"high", 4}}));
}

TEST(EngineScenarioTest, DrfFavoursTheSmallerShare) {
  // Same queue and priority: the job holding less goes first and gets the last GPU.
  auto s = Make({{"nodes", {GpuNode("n1", 4)}},
                 {"jobs",
                  {GangJob("rich", 3, 1, "default", 0, {{"min_available", 1}, {"running", {"n1", "n1"}}}),
                   GangJob("poor", 2, 1, "default", 0, {{"min_available", 1}, {"creation", 5}})}}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  // 2 GPUs free: poor (share 0) goes first and takes what it asks (2), rich gets none.
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"poor", 2}}));
}

TEST(EngineScenarioTest, PredicatesHonourSelectorsTaintsAndDevices) {
  Json tainted = GpuNode("tainted", 8, "64", {{"taints", {{{"key", "dedicated"}, {"value", "x"}, {"effect", "NoSchedule"}}}}});
  Json labelled = GpuNode("labelled", 8, "64", {{"labels", {{"zone", "b"}}}});
  Json small = GpuNode("small", 1);
  auto s = Make({{"nodes", {tainted, labelled, small}},
                 {"jobs",
                  {GangJob("sel", 2, 1, "default", 0, {{"node_selector", {{"zone", "b"}}}}),
                   GangJob("tol", 1, 4, "default", 0,
                           {{"tolerations", {{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "x"}, {"effect", "NoSchedule"}}}},
                            {"node_selector", {{"kubernetes.io/hostname", "none"}}}}),
                   GangJob("two", 1, 2, "default", 0, {{"node_selector", {{"zone", "b"}}}})}}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  std::map<std::string, std::set<std::string>> nodes;
  for (const auto& b : r->binds) nodes[b.job].insert(b.allocation.node);
  EXPECT_EQ(nodes["sel"], (std::set<std::string>{"labelled"}));
  EXPECT_EQ(nodes["two"], (std::set<std::string>{"labelled"}));
  EXPECT_FALSE(nodes.count("tol"));  // its selector matches no node
  EXPECT_NE(r->pending.at("tol").find("node affinity/selector"), std::string::npos) << r->pending.at("tol");
}

TEST(EngineScenarioTest, NodeOrderBinpackVersusSpread) {
  Json scenario = {{"nodes", {GpuNode("n1", 8), GpuNode("n2", 8)}},
                   {"jobs", {GangJob("a", 4, 1, "default", 0, {{"running", {"n2"}}, {"min_available", 1}})}}};
  auto pack = Make(scenario);
  auto r = pack->RunCycle();
  ASSERT_TRUE(r.ok());
  for (const auto& b : r->binds) EXPECT_EQ(b.allocation.node, "n2");  // binpack: fill n2
  Json spread_conf = Config("allocate", Json::array());
  spread_conf["tiers"][1]["plugins"] = Json::array(
      {"drf", "predicates", "proportion",
       {{"name", "nodeorder"}, {"arguments", {{"binpack", 0}, {"leastrequested", 1}}}},
       {{"name", "deviceshare"}, {"arguments", {{"weight", 0}}}}});
  auto spread = Make(scenario, spread_conf);
  r = spread->RunCycle();
  ASSERT_TRUE(r.ok());
  std::map<std::string, int> per_node;
  for (const auto& b : r->binds) ++per_node[b.allocation.node];
  EXPECT_EQ(per_node["n1"], 2);  // least requested alternates between the nodes
  EXPECT_EQ(per_node["n2"], 1);
}

TEST(EngineScenarioTest, DeviceShareSharedGpusAndStrategies) {
  // Four 50% tasks on one 2-GPU node: binpack packs them onto both cards two by two.
  Json job = {{"name", "share"}, {"replicas", 4}, {"min_available", 4},
              {"requests", {{"koordinator.sh/gpu-core", 50}, {"koordinator.sh/gpu-memory-ratio", 50}}}};
  auto s = Make({{"nodes", {GpuNode("n1", 2)}}, {"queues", {{{"name", "other"}}}}, {"jobs", {job}}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->binds.size(), 4u);
  std::map<int, int64_t> core;
  for (const auto& b : r->binds) {
    ASSERT_EQ(b.allocation.devices.size(), 1u);
    core[b.allocation.devices[0].minor] += b.allocation.devices[0].core;
  }
  EXPECT_EQ(core, (std::map<int, int64_t>{{0, 100}, {1, 100}}));
  EXPECT_TRUE(s->cluster().CheckInvariants().ok());
  // A fifth 50% task does not fit: each card is full.
  Json late = job;
  late["name"] = "late";
  late["replicas"] = 1;
  late["min_available"] = 1;
  late["queue"] = "other";  // the default queue holds the whole cluster: it is overused
  ASSERT_TRUE(LoadScenario({{"jobs", {late}}}, s.get()).ok());
  r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  EXPECT_NE(r->pending.at("late").find("0/1 nodes are available"), std::string::npos)
      << r->pending.at("late");
}

TEST(EngineScenarioTest, DeviceShareStrategyChoosesTheCards) {
  // Two half-GPU tasks on one 2-GPU node: binpack shares one card, spread uses both.
  Json job = {{"name", "halves"}, {"replicas", 2},
              {"requests", {{"koordinator.sh/gpu-core", 50}, {"koordinator.sh/gpu-memory-ratio", 50}}}};
  Json scenario = {{"nodes", {GpuNode("n1", 2)}}, {"jobs", {job}}};
  auto cards = [&](const std::string& strategy) {
    Json conf = Config("allocate");
    conf["tiers"][1]["plugins"][4] = {{"name", "deviceshare"}, {"arguments", {{"strategy", strategy}}}};
    auto s = Make(scenario, conf);
    auto r = s->RunCycle();
    EXPECT_TRUE(r.ok());
    std::set<int> minors;
    for (const auto& b : r->binds) minors.insert(b.allocation.devices.at(0).minor);
    EXPECT_EQ(r->binds.size(), 2u);
    return minors.size();
  };
  EXPECT_EQ(cards("binpack"), 1u);
  EXPECT_EQ(cards("spread"), 2u);
}

TEST(EngineScenarioTest, BackfillPlacesBestEffortTasks) {
  Json be = {{"name", "be"}, {"replicas", 3}, {"min_available", 1}};
  auto s = Make({{"nodes", {GpuNode("n1", 1)}}, {"jobs", {GangJob("full", 1, 1), be}}},
                Config("enqueue, allocate, backfill"));
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"be", 3}, {"full", 1}}));
  // Without backfill the best-effort job waits.
  auto s2 = Make({{"nodes", {GpuNode("n1", 1)}}, {"jobs", {be}}}, Config("enqueue, allocate"));
  r = s2->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
}

TEST(EngineScenarioTest, EnqueueRejectsJobsAboveCapabilityOrCluster) {
  auto s = Make({{"nodes", {GpuNode("n1", 8)}},
                 {"queues", {{{"name", "capped"}, {"capability", {{"gpu", 4}}}}}},
                 {"jobs", {GangJob("fits", 4, 1, "capped"), GangJob("over", 2, 1, "capped", 0, {{"creation", 1}}),
                           GangJob("huge", 9, 1)}}},
                Config("enqueue, allocate"));
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"fits", 4}}));
  EXPECT_NE(r->pending.at("over").find("not admitted: queue capped would exceed its capability"),
            std::string::npos) << r->pending.at("over");
  EXPECT_NE(r->pending.at("huge").find("exceeds the cluster"), std::string::npos) << r->pending.at("huge");
}

TEST(EngineScenarioTest, PreemptWithinQueueByPriority) {
  auto s = Make({{"nodes", {GpuNode("n1", 4)}},
                 {"jobs", {GangJob("low", 4, 1, "default", 1, {{"running", {"n1", "n1", "n1", "n1"}}, {"min_available", 1}}),
                           GangJob("high", 2, 1, "default", 10)}}},
                Config("allocate, preempt"));
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(EvictionsPerJob(*r), (std::map<std::string, int>{{"low", 2}}));
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"high", 2}}));
  EXPECT_NE(r->evictions[0].reason.find("preempted by task high-"), std::string::npos);
  EXPECT_TRUE(s->cluster().CheckInvariants().ok());
  // An equal-priority job preempts nothing.
  auto s2 = Make({{"nodes", {GpuNode("n1", 4)}},
                  {"jobs", {GangJob("a", 4, 1, "default", 1, {{"running", {"n1", "n1", "n1", "n1"}}, {"min_available", 1}}),
                            GangJob("b", 2, 1, "default", 1)}}},
                 Config("allocate, preempt"));
  r = s2->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->evictions.empty());
}

TEST(EngineScenarioTest, PreemptNeverBreaksARunningGang) {
  // The victim runs exactly its minimum: gang forbids taking any of it.
  auto s = Make({{"nodes", {GpuNode("n1", 4)}},
                 {"jobs", {GangJob("gang", 4, 1, "default", 1, {{"running", {"n1", "n1", "n1", "n1"}}}),
                           GangJob("high", 2, 1, "default", 10)}}},
                Config("allocate, preempt"));
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->evictions.empty());
  EXPECT_TRUE(r->binds.empty());
}

TEST(EngineScenarioTest, ReclaimFromQueueAboveItsShare) {
  // Queue a (weight 1) took all 8 GPUs while b was idle; b (weight 1) now asks for 4.
  auto s = Make({{"nodes", {GpuNode("n1", 8)}},
                 {"queues", {{{"name", "a"}, {"weight", 1}}, {{"name", "b"}, {"weight", 1}}}},
                 {"jobs", {GangJob("a-job", 8, 1, "a", 0, {{"min_available", 1}, {"running", Json(std::vector<std::string>(8, "n1"))}}),
                           GangJob("b-job", 4, 1, "b")}}},
                Config("allocate, reclaim"));
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(EvictionsPerJob(*r), (std::map<std::string, int>{{"a-job", 4}}));
  EXPECT_EQ(BindsPerJob(*r), (std::map<std::string, int>{{"b-job", 4}}));
  EXPECT_NE(r->evictions[0].reason.find("reclaimed for queue b"), std::string::npos);
  // A queue marked not reclaimable keeps what it holds.
  auto s2 = Make({{"nodes", {GpuNode("n1", 8)}},
                  {"queues", {{{"name", "a"}, {"reclaimable", false}}, {{"name", "b"}}}},
                  {"jobs", {GangJob("a-job", 8, 1, "a", 0, {{"min_available", 1}, {"running", Json(std::vector<std::string>(8, "n1"))}}),
                            GangJob("b-job", 4, 1, "b")}}},
                 Config("allocate, reclaim"));
  r = s2->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->evictions.empty());
}

TEST(EngineScenarioTest, ProportionTakesTurnsByWeight) {
  // Weights 1:3 on 8 GPUs, both queues asking for 8 one-GPU jobs: 2 and 6.
  Json jobs = Json::array();
  for (int i = 0; i < 8; ++i) {
    jobs.push_back(GangJob(absl::StrCat("a", i), 1, 1, "a"));
    jobs.push_back(GangJob(absl::StrCat("b", i), 1, 1, "b"));
  }
  auto s = Make({{"nodes", {GpuNode("n1", 8, "640")}},
                 {"queues", {{{"name", "a"}, {"weight", 1}}, {{"name", "b"}, {"weight", 3}}}},
                 {"jobs", jobs}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  int a = 0, b = 0;
  for (const auto& bind : r->binds) (bind.job[0] == 'a' ? a : b)++;
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 6);
  for (const auto& q : r->queues)
    if (q.queue == "a") EXPECT_DOUBLE_EQ(q.deserved[2], 2.0);
    else if (q.queue == "b") EXPECT_DOUBLE_EQ(q.deserved[2], 6.0);
}

TEST(EngineScenarioTest, Issue729QueueWithRoomKeepsScheduling) {
  // Queue a asks little, queue b much, the cluster has room beyond a's weighted half:
  // b's deserved share grows to take it (water-filling), so b keeps being scheduled until full.
  Json jobs = Json::array();
  jobs.push_back(GangJob("a0", 1, 1, "a"));
  for (int i = 0; i < 7; ++i) jobs.push_back(GangJob(absl::StrCat("b", i), 1, 1, "b"));
  auto s = Make({{"nodes", {GpuNode("n1", 8, "640")}},
                 {"queues", {{{"name", "a"}, {"weight", 1}}, {{"name", "b"}, {"weight", 1}}}},
                 {"jobs", jobs}});
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->binds.size(), 8u);
  EXPECT_TRUE(r->pending.empty());
}

// The issue-561 setting: one 8-GPU gang behind a stream of 1-GPU jobs on 8 GPUs. Each small job
// runs 2 cycles; a new one arrives every cycle. Returns the cycle at which the big job started
// (or -1) and how many small jobs started while the big one could not.
std::pair<int, int> RunStream(const Json& config, int cycles) {
  auto s = Make({{"nodes", {GpuNode("n1", 8, "640")}}}, config);
  std::map<std::string, int> started;
  int next = 0, small_started_while_waiting = 0, big_started = -1;
  auto submit_small = [&] {
    Json spec = GangJob(absl::StrCat("small", next++), 1, 1);
    spec["creation"] = next;
    EXPECT_TRUE(LoadScenario({{"jobs", {spec}}}, s.get()).ok());
  };
  for (int i = 0; i < 6; ++i) submit_small();
  Json big = GangJob("big", 8, 1);
  big["creation"] = 100;  // arrives after the first wave
  EXPECT_TRUE(LoadScenario({{"jobs", {big}}}, s.get()).ok());
  for (int c = 0; c < cycles; ++c) {
    for (int k = 0; k < 3; ++k) submit_small();
    auto r = s->RunCycle();
    EXPECT_TRUE(r.ok()) << r.status();
    for (const auto& [job, n] : BindsPerJob(*r)) {
      started[job] = c;
      if (job == "big") big_started = c;
      else if (big_started < 0) ++small_started_while_waiting;
    }
    if (big_started >= 0) break;
    for (const auto& [job, at] : started)
      if (job != "big" && c - at >= 1 && s->FindJob(job)) EXPECT_TRUE(s->DeleteJob(job).ok());
  }
  return {big_started, small_started_while_waiting};
}

TEST(EngineScenarioTest, Issue561SmallJobsPassAndTheLargeOneStillStarts) {
  Json with_policy = Config("enqueue, allocate, backfill",
                            Json::array({{{"name", "reservation"}, {"arguments", {{"after_cycles", 2}}}}}));
  auto [big_at, small_runs] = RunStream(with_policy, 20);
  EXPECT_GT(small_runs, 0) << "small jobs must run while the large one cannot";
  ASSERT_GE(big_at, 0) << "the large job never started";
  // Bound: after_cycles (2) + the longest remaining run of a small job (2) + 1.
  EXPECT_LE(big_at, 5);
  // Without the policy, the stream of small jobs starves the large one for the whole run.
  auto [never, runs] = RunStream(Config("enqueue, allocate, backfill"), 20);
  EXPECT_EQ(never, -1);
  EXPECT_GT(runs, 0);
}

}  // namespace
}  // namespace gpufleet::engine
