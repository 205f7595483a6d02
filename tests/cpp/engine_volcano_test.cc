// Volcano's configuration and the plugins its stock configuration names (binpack, conformance,
// overcommit, nodeorder's argument names), as scenario tables in the style of Volcano's own
// plugin tests: nodes, jobs and a configuration in; node choice, victims or admission out.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "gpufleet/engine/config.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"

namespace gpufleet::engine {
namespace {

// Volcano's helm-chart default (installer/helm/chart/volcano/config/volcano-scheduler.conf) as
// JSON; tests/python/test_volcano_conf.py loads the shipped YAML files themselves.
Json VolcanoStockConfig() {
  return Json::parse(R"J({
    "actions": "enqueue, allocate, backfill",
    "tiers": [
      {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": false},
                   {"name": "conformance"}]},
      {"plugins": [{"name": "overcommit"}, {"name": "drf", "enablePreemptable": false},
                   {"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"},
                   {"name": "binpack"}]}]})J");
}

Json VolcanoGpuNode(const std::string& name, int gpus = 8) {
  return {{"name", name}, {"cpu", "64"}, {"memory", "512Gi"},
          {"gpus", {{"count", gpus}, {"model", "A100"}, {"memory", "80Gi"}}}};
}

// A job of `replicas` tasks, each asking for `requests`; `running` places its tasks.
Json MakeJob(const std::string& name, int replicas, Json requests, Json extra = Json::object()) {
  Json j = {{"name", name}, {"replicas", replicas}, {"requests", std::move(requests)}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = *it;
  return j;
}

Json Running(int n, const std::string& node) {
  return {{"running", Json(std::vector<std::string>(n, node))}, {"min_available", 1}};
}

absl::StatusOr<CycleResult> RunOnce(const Json& scenario, const Json& config) {
  Scheduler s;
  if (absl::Status c = s.Configure(config); !c.ok()) return c;
  if (absl::Status l = LoadScenario(scenario, &s); !l.ok()) return l;
  auto r = s.RunCycleAt(1.0);
  if (r.ok()) EXPECT_TRUE(s.cluster().CheckInvariants().ok());
  return r;
}

std::string ConfigError(const Json& config) {
  auto c = ConfigFromJson(config);
  return c.ok() ? "" : std::string(c.status().message());
}

::testing::AssertionResult Contains(const std::string& got, const std::string& want) {
  if (absl::StrContains(got, want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << got << "\" lacks \"" << want << "\"";
}

// --- Configuration ---------------------------------------------------------------------------------

TEST(VolcanoConfigTest, StockConfigurationLoadsAndKeepsItsSwitches) {
  auto c = ConfigFromJson(VolcanoStockConfig());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->TierNames(), (std::vector<std::vector<std::string>>{
                                {"priority", "gang", "conformance"},
                                {"overcommit", "drf", "predicates", "proportion", "nodeorder",
                                 "binpack"}}));
  std::map<std::string, std::vector<std::string>> disabled;
  for (const auto& [plugin, points] : c->DisabledPoints()) disabled[plugin] = PointNames(points);
  EXPECT_EQ(disabled, (std::map<std::string, std::vector<std::string>>{
                          {"gang", {"preemptable"}}, {"drf", {"preemptable"}}}));
  // The canonical form keeps the switches, and reads back to the same configuration.
  Json canonical = c->ToJson();
  EXPECT_EQ(canonical["tiers"][0]["plugins"][1]["enablePreemptable"], false);
  auto again = ConfigFromJson(canonical);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ToJson(), canonical);
}

TEST(VolcanoConfigTest, ConfigMapWrapperIsUnwrapped) {
  Json map = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", "volcano-scheduler-configmap"}, {"namespace", "volcano-system"}}},
              {"data", {{"volcano-scheduler.conf", VolcanoStockConfig()}}}};
  auto c = ConfigFromJson(map);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ToJson(), ConfigFromJson(VolcanoStockConfig())->ToJson());
  // The held text may be JSON; a lone "*.conf" key under another name is taken too.
  Json text = map;
  text["data"] = {{"agent-scheduler.conf", VolcanoStockConfig().dump()}};
  EXPECT_TRUE(ConfigFromJson(text).ok());
  // Errors name the ConfigMap and the key.
  Json bad = map;
  bad["data"]["volcano-scheduler.conf"]["tiers"][1]["plugins"][5] = {{"name", "sla"}};
  EXPECT_TRUE(Contains(ConfigError(bad),
                       "ConfigMap volcano-system/volcano-scheduler-configmap, data "
                       "\"volcano-scheduler.conf\": tiers[1].plugins[5]: unknown plugin \"sla\""));
  Json yaml = map;
  yaml["data"]["volcano-scheduler.conf"] = "actions: \"enqueue\"\ntiers: []\n";
  EXPECT_TRUE(Contains(ConfigError(yaml), "YAML text is read by gpufleet.engine.load_config"));
  Json two = map;
  two["data"] = {{"a.conf", "{}"}, {"b.conf", "{}"}};
  EXPECT_TRUE(Contains(ConfigError(two), "several \"*.conf\" keys (data holds: a.conf, b.conf)"));
  Json other = map;
  other["kind"] = "Deployment";
  EXPECT_TRUE(Contains(ConfigError(other), "kind \"Deployment\"; expected a ConfigMap"));
}

TEST(VolcanoConfigTest, SwitchesAreCheckedByName) {
  Json c = VolcanoStockConfig();
  // Volcano's Go field name is not its configuration key.
  c["tiers"][0]["plugins"][0]["enabledJobOrder"] = false;
  EXPECT_TRUE(Contains(ConfigError(c), "unknown field \"enabledJobOrder\""));
  EXPECT_TRUE(Contains(ConfigError(c), "enableJobOrder"));
  c = VolcanoStockConfig();
  c["tiers"][0]["plugins"][0]["enableJobOrder"] = "no";
  EXPECT_TRUE(Contains(ConfigError(c), "(priority): \"enableJobOrder\" must be true or false"));
  c = VolcanoStockConfig();
  c["tiers"][1]["plugins"][1]["enableHierarchy"] = true;
  EXPECT_TRUE(Contains(ConfigError(c), "(drf): \"enableHierarchy: true\" is not supported"));
  // Every switch of Volcano's list is accepted; those without a gpufleet question gate nothing.
  c = VolcanoStockConfig();
  for (const char* key :
       {"enableJobOrder", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
        "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder",
        "enabledClusterOrder", "enableBestNode", "enableNodeOrder", "enableTargetJob",
        "enableReservedNodes", "enableJobEnqueued", "enabledVictim", "enableJobStarving",
        "enabledOverused", "enabledAllocatable", "enabledHyperNodeOrder", "enabledSubJobReady",
        "enabledSubJobPipelined", "enabledSubJobOrder", "enabledHyperNodeGradient",
        "enableHierarchy"})
    c["tiers"][1]["plugins"][3][key] = false;  // proportion
  auto parsed = ConfigFromJson(c);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(PointNames(parsed->DisabledPoints().at("proportion")),
            (std::vector<std::string>{"job-order", "queue-order", "task-order", "node-score",
                                      "preemptable", "reclaimable", "overused", "job-ready",
                                      "allocatable", "enqueueable", "target-job"}));
  // A plugin whose answer an action needs, switched off, no longer answers it.
  c = VolcanoStockConfig();
  c["tiers"][1]["plugins"][2]["enablePredicate"] = false;
  EXPECT_TRUE(Contains(ConfigError(c), "\"allocate\" needs a plugin that answers \"predicates\""));
}

TEST(VolcanoConfigTest, UnknownPluginsAndActionsListTheSupportedOnes) {
  Json c = VolcanoStockConfig();
  c["tiers"][0]["plugins"].push_back({{"name", "sla"}});
  std::string e = ConfigError(c);
  EXPECT_TRUE(Contains(e, "tiers[0].plugins[3]: unknown plugin \"sla\""));
  for (const std::string& p : Registry<Plugin>::Global().Names()) EXPECT_TRUE(Contains(e, p));
  c = VolcanoStockConfig();
  c["actions"] = "enqueue, elect, allocate";
  e = ConfigError(c);
  EXPECT_TRUE(Contains(e, "actions[1]: unknown action \"elect\"; known: allocate, backfill"));
}

TEST(VolcanoConfigTest, ActionConfigurationsAndMetrics) {
  Json c = VolcanoStockConfig();
  c["metrics"] = {{"address", "http://prometheus:9090"}, {"interval", "30s"}};
  c["configurations"] = {{{"name", "backfill"}, {"arguments", Json::object()}}};
  auto parsed = ConfigFromJson(c);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToJson()["metrics"]["interval"], "30s");
  // Arguments reach the action, which checks them as its own.
  c["configurations"] = {{{"name", "allocate"}, {"arguments", {{"predicateErrorCacheEnable", true}}}}};
  EXPECT_TRUE(Contains(ConfigError(c), "actions[1]: allocate: unknown parameter \"predicateErrorCacheEnable\""));
  c["configurations"] = {{{"name", "preempt"}, {"arguments", Json::object()}}};
  EXPECT_TRUE(Contains(ConfigError(c), "configurations[0]: action \"preempt\" is not in \"actions\""));
}

// --- Switches change what the session asks ----------------------------------------------------------

TEST(VolcanoSwitchTest, JobOrderSwitchedOffLeavesCreationOrder) {
  // One node with room for one of two 4-GPU jobs: priority decides unless its job order is off.
  Json scenario = {{"nodes", {VolcanoGpuNode("n1", 4)}},
                   {"jobs", {MakeJob("early", 4, {{"nvidia.com/gpu", 1}}, {{"creation", 1}}),
                             MakeJob("urgent", 4, {{"nvidia.com/gpu", 1}},
                                     {{"creation", 2}, {"priority", 10}})}}};
  struct Case {
    bool job_order;
    std::string winner;
  };
  for (const Case& tc : {Case{true, "urgent"}, Case{false, "early"}}) {
    SCOPED_TRACE(tc.job_order ? "job order on" : "job order off");
    Json config = VolcanoStockConfig();
    config["tiers"][0]["plugins"][0]["enableJobOrder"] = tc.job_order;
    auto r = RunOnce(scenario, config);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->binds.size(), 4u);
    for (const auto& b : r->binds) EXPECT_EQ(b.job, tc.winner);
  }
}

// --- binpack ----------------------------------------------------------------------------------------

Json BinpackConfig(Json binpack_args) {
  return {{"actions", "allocate"},
          {"tiers", {{{"plugins", {"predicates", {{"name", "binpack"}, {"arguments", binpack_args}},
                                   {{"name", "deviceshare"}, {"arguments", {{"weight", 0}}}}}}}}}};
}

TEST(VolcanoBinpackTest, NodeOrderTable) {
  // n1 is busy in cpu, n2 in GPUs; the new task asks for 1 cpu and 1 GPU.
  Json busy = {{"nodes", {VolcanoGpuNode("n1"), VolcanoGpuNode("n2")}},
               {"jobs", {MakeJob("cpu-hog", 1, {{"cpu", "48"}}, Running(1, "n1")),
                         MakeJob("gpu-hog", 1, {{"cpu", "1"}, {"nvidia.com/gpu", 6}},
                                 Running(1, "n2")),
                         MakeJob("new", 1, {{"cpu", "1"}, {"nvidia.com/gpu", 1}})}}};
  struct Case {
    std::string name;
    Json args;
    std::string node;
  };
  const std::vector<Case> table = {
      // cpu 49/64 on n1 against 2/64 on n2; GPUs are not weighed unless listed.
      {"cpu and memory only (defaults)", Json::object(), "n1"},
      // cpu (49/64)*1 + gpu (1/8)*10 on n1 = 2.0 against (2/64)*1 + (7/8)*10 = 8.8 on n2.
      {"GPUs listed and weighed 10",
       {{"binpack.resources", "nvidia.com/gpu"}, {"binpack.resources.nvidia.com/gpu", 10}}, "n2"},
      // Listed with the default weight 1: n1 (0.77 + 0.125) / 2 against n2 (0.03 + 0.875) / 2.
      {"GPUs listed, weight 1", {{"binpack.resources", "nvidia.com/gpu"}}, "n2"},
      // cpu weight 0 leaves only the GPU term.
      {"cpu weighed 0", {{"binpack.cpu", 0}, {"binpack.resources", "nvidia.com/gpu"}}, "n2"},
  };
  for (const Case& tc : table) {
    SCOPED_TRACE(tc.name);
    Json scenario = busy;
    auto r = RunOnce(scenario, BinpackConfig(tc.args));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->binds.size(), 1u);
    EXPECT_EQ(r->binds[0].allocation.node, tc.node);
  }
}

TEST(VolcanoBinpackTest, WeightZeroScoresNothing) {
  // binpack.weight 0 registers no score (Volcano), so the fuller node is not preferred: with no
  // other score the first node wins the tie.
  Json tie = {{"nodes", {VolcanoGpuNode("n1"), VolcanoGpuNode("n2")}},
              {"jobs", {MakeJob("hog", 1, {{"cpu", "30"}}, Running(1, "n2")),
                        MakeJob("new", 1, {{"cpu", "4"}})}}};
  auto r = RunOnce(tie, BinpackConfig({{"binpack.weight", 0}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->binds.at(0).allocation.node, "n1");
  r = RunOnce(tie, BinpackConfig(Json::object()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->binds.at(0).allocation.node, "n2");
}

TEST(VolcanoBinpackTest, ArgumentErrors) {
  auto err = [](Json args) { return ConfigError(BinpackConfig(std::move(args))); };
  EXPECT_TRUE(Contains(err({{"binpack.resources", "nvidia.com/gpu, example.com/foo"}}),
                       "binpack.resources lists \"example.com/foo\", which gpufleet does not schedule"));
  EXPECT_TRUE(Contains(err({{"binpack.resources.nvidia.com/gpu", 2}}),
                       "is given but binpack.resources does not list nvidia.com/gpu"));
  EXPECT_TRUE(Contains(err({{"binpack.resources.example.com/foo", 2}}),
                       "binpack: unknown parameter \"binpack.resources.example.com/foo\""));
  EXPECT_TRUE(Contains(err({{"binpack.cpu", -1}}), "\"binpack.cpu\" must be >= 0"));
  EXPECT_TRUE(Contains(err({{"binpack.weigth", 1}}), "(did you mean \"binpack.weight\"?)"));
}

// --- conformance ------------------------------------------------------------------------------------

TEST(VolcanoConformanceTest, CriticalPodsAreNeverVictims) {
  // A full 4-GPU node; a higher-priority 2-GPU job preempts unless the victims are critical.
  struct Case {
    std::string name;
    Json victim;
    bool conformance;
    int evicted;
  };
  auto victim = [](const std::string& name, int priority) {
    return MakeJob(name, 4, {{"nvidia.com/gpu", 1}},
                   {{"priority", priority}, {"running", Json(std::vector<std::string>(4, "n1"))},
                    {"min_available", 1}});
  };
  const std::vector<Case> table = {
      {"ordinary pods", victim("default/batch", 1), true, 2},
      {"kube-system pods", victim("kube-system/dns", 1), true, 0},
      {"kube-system pods without conformance", victim("kube-system/dns", 1), false, 2},
      {"system-cluster-critical priority", victim("default/agent", 2000000000), true, 0},
      {"system-node-critical priority", victim("default/agent", 2000001000), true, 0},
      {"critical priority without conformance", victim("default/agent", 2000000000), false, 2},
  };
  for (const Case& tc : table) {
    SCOPED_TRACE(tc.name);
    Json preemptor = MakeJob("default/urgent", 2, {{"nvidia.com/gpu", 1}},
                             {{"priority", 2100000000}});
    Json scenario = {{"nodes", {VolcanoGpuNode("n1", 4)}}, {"jobs", {tc.victim, preemptor}}};
    Json tier1 = Json::array({"priority", "gang"});
    if (tc.conformance) tier1.push_back("conformance");
    Json config = {{"actions", "allocate, preempt"},
                   {"tiers", {{{"plugins", tier1}},
                              {{"plugins", {"drf", "predicates", "proportion", "nodeorder",
                                            "deviceshare"}}}}}};
    auto r = RunOnce(scenario, config);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(static_cast<int>(r->evictions.size()), tc.evicted);
    EXPECT_EQ(static_cast<int>(r->binds.size()), tc.evicted);
  }
}

TEST(VolcanoConformanceTest, KubeSystemPodsAreNotReclaimed) {
  // Queue a holds all 8 GPUs while b asks for 4: reclaim takes from a, never kube-system's pods.
  for (const std::string& name : {std::string("default/train"), std::string("kube-system/dns")}) {
    SCOPED_TRACE(name);
    Json scenario = {
        {"nodes", {VolcanoGpuNode("n1")}},
        {"queues", {{{"name", "a"}, {"weight", 1}}, {{"name", "b"}, {"weight", 1}}}},
        {"jobs", {MakeJob(name, 8, {{"nvidia.com/gpu", 1}}, {{"queue", "a"}, {"min_available", 1},
                                                            {"running", Json(std::vector<std::string>(8, "n1"))}}),
                  MakeJob("default/b-job", 4, {{"nvidia.com/gpu", 1}}, {{"queue", "b"}})}}};
    Json config = {{"actions", "allocate, reclaim"},
                   {"tiers", {{{"plugins", {"priority", "gang", "conformance"}}},
                              {{"plugins", {"drf", "predicates", "proportion", "nodeorder"}}}}}};
    auto r = RunOnce(scenario, config);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->evictions.size(), name == "kube-system/dns" ? 0u : 4u);
  }
}

// --- overcommit -------------------------------------------------------------------------------------

TEST(VolcanoOvercommitTest, EnqueueDecisionTable) {
  // One 8-GPU node; jobs wait in creation order. Admitted minimums plus the next job's must fit
  // in factor x capacity less what runs, in every resource the job asks for.
  struct Case {
    std::string name;
    Json args;
    Json jobs;
    std::vector<std::string> admitted;
  };
  auto waiting = [](const std::string& name, int gpus, int creation) {
    return MakeJob(name, gpus, {{"nvidia.com/gpu", 1}}, {{"creation", creation}});
  };
  const std::vector<Case> table = {
      {"factor 1: exactly the cluster", {{"overcommit-factor", 1.0}},
       {waiting("a", 8, 1), waiting("b", 2, 2), waiting("c", 1, 3)}, {"a"}},
      // 1.2 x 8 = 9.6: a (8) + b (2) is too much, but a + c (1) fits.
      {"default factor 1.2", Json::object(),
       {waiting("a", 8, 1), waiting("b", 2, 2), waiting("c", 1, 3)}, {"a", "c"}},
      {"factor 1.25", {{"overcommit-factor", 1.25}},
       {waiting("a", 8, 1), waiting("b", 2, 2), waiting("c", 1, 3)}, {"a", "b"}},
      // 4 GPUs run already: 8 - 4 = 4 idle at factor 1.
      {"running work counts as used", {{"overcommit-factor", 1.0}},
       {MakeJob("run", 4, {{"nvidia.com/gpu", 1}}, Running(4, "n1")), waiting("big", 5, 1),
        waiting("fits", 4, 2)},
       {"fits", "run"}},
      // Only the resources a job asks for count: a cpu-only job passes a GPU-full cluster.
      {"only requested resources", {{"overcommit-factor", 1.0}},
       {waiting("gpus", 8, 1), MakeJob("cpu-only", 1, {{"cpu", "4"}}, {{"creation", 2}})},
       {"cpu-only", "gpus"}},
  };
  for (const Case& tc : table) {
    SCOPED_TRACE(tc.name);
    Json config = {{"actions", "enqueue"},
                   {"tiers", {{{"plugins", {"priority", "gang"}}},
                              {{"plugins", {{{"name", "overcommit"}, {"arguments", tc.args}},
                                            "predicates"}}}}}};
    auto r = RunOnce({{"nodes", {VolcanoGpuNode("n1")}}, {"jobs", tc.jobs}}, config);
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<std::string> admitted;
    for (const Json& j : tc.jobs) {
      const std::string name = j["name"];
      auto it = r->pending.find(name);
      if (it == r->pending.end() || !absl::StrContains(it->second, "not admitted"))
        admitted.push_back(name);
      else
        EXPECT_TRUE(Contains(it->second, "resource in cluster is overused: gpu"));
    }
    std::sort(admitted.begin(), admitted.end());
    EXPECT_EQ(admitted, tc.admitted);
  }
}

TEST(VolcanoOvercommitTest, FactorBelowOneIsAnError) {
  Json config = {{"actions", "enqueue"},
                 {"tiers", {{{"plugins", {"overcommit(overcommit-factor=0.5)"}}}}}};
  EXPECT_TRUE(Contains(ConfigError(config),
                       "overcommit: \"overcommit-factor\" must be a finite number >= 1, got 0.5"));
}

// --- nodeorder with Volcano's argument names -------------------------------------------------------

TEST(VolcanoNodeOrderTest, VolcanoWeightNamesTable) {
  // n1: cpu busy, GPUs idle; n2: half used evenly. The task asks for 8 cpu, 64Gi and 1 GPU.
  Json scenario = {
      {"nodes", {VolcanoGpuNode("n1"), VolcanoGpuNode("n2")}},
      {"jobs", {MakeJob("cpu-hog", 1, {{"cpu", "40"}}, Running(1, "n1")),
                MakeJob("even", 1, {{"cpu", "24"}, {"memory", "192Gi"}, {"nvidia.com/gpu", 3}},
                        Running(1, "n2")),
                MakeJob("new", 1, {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", 1}})}}};
  struct Case {
    std::string name;
    Json args;
    std::string node;
  };
  const std::vector<Case> table = {
      // gpufleet's default packs GPUs: n2 has more in use.
      {"defaults", Json::object(), "n2"},
      // Least requested GPUs: n1.
      {"leastrequested.weight", {{"leastrequested.weight", 1}, {"mostrequested.weight", 0}}, "n1"},
      // Balance: n2 after placing is 0.5/0.5/0.5 (100), n1 0.75/0.125/0.125 (70).
      {"balancedresource.weight", {{"balancedresource.weight", 1}, {"mostrequested.weight", 0}},
       "n2"},
      // Volcano's own defaults written out: least requested favours n1 by 87.5 - 50 = 37.5, which
      // outweighs balance favouring n2 by 100 - 70 = 30.
      {"Volcano's defaults",
       {{"leastrequested.weight", 1}, {"mostrequested.weight", 0}, {"nodeaffinity.weight", 2},
        {"podaffinity.weight", 2}, {"balancedresource.weight", 1}, {"tainttoleration.weight", 3},
        {"imagelocality.weight", 1}, {"podtopologyspread.weight", 2}},
       "n1"},
      // ...and balance twice as heavy turns it: 37.5 < 2 x 30.
      {"balance weighed 2", {{"leastrequested.weight", 1}, {"mostrequested.weight", 0},
                             {"balancedresource.weight", 2}}, "n2"},
  };
  for (const Case& tc : table) {
    SCOPED_TRACE(tc.name);
    Json config = {{"actions", "allocate"},
                   {"tiers", {{{"plugins", {"predicates", {{"name", "nodeorder"}, {"arguments", tc.args}},
                                            {{"name", "deviceshare"}, {"arguments", {{"weight", 0}}}}}}}}}};
    auto r = RunOnce(scenario, config);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->binds.size(), 1u);
    EXPECT_EQ(r->binds[0].allocation.node, tc.node);
  }
  Json bad = {{"actions", "allocate"},
              {"tiers", {{{"plugins", {"predicates", "nodeorder(leastrequsted.weight=1)"}}}}}};
  EXPECT_TRUE(Contains(ConfigError(bad), "nodeorder: unknown parameter \"leastrequsted.weight\" "
                                         "(did you mean \"leastrequested.weight\"?)"));
}

TEST(VolcanoPredicatesTest, ConstraintSwitchesTable) {
  // "tainted" is in zone a but tainted; "open" is in zone b. The job wants zone a and tolerates
  // nothing, so with both checks on it fits nowhere.
  Json tainted = VolcanoGpuNode("tainted");
  tainted["labels"] = {{"zone", "a"}};
  tainted["taints"] = {{{"key", "dedicated"}, {"value", "x"}, {"effect", "NoSchedule"}}};
  Json open = VolcanoGpuNode("open");
  open["labels"] = {{"zone", "b"}};
  Json scenario = {{"nodes", {tainted, open}},
                   {"jobs", {MakeJob("pinned", 1, {{"cpu", "1"}, {"nvidia.com/gpu", 1}},
                                     {{"node_selector", {{"zone", "a"}}}})}}};
  struct Case {
    std::string name;
    Json args;
    std::string node;  // "" = not placed
  };
  const std::vector<Case> table = {
      {"defaults", Json::object(), ""},
      {"both on, Volcano's other switches off",
       {{"predicate.NodePortsEnable", false}, {"predicate.PodAffinityEnable", false},
        {"predicate.CacheEnable", true}, {"predicate.VolumeBindingEnable", false}}, ""},
      {"taints off", {{"predicate.TaintTolerationEnable", false}}, "tainted"},
      {"node affinity off", {{"predicate.NodeAffinityEnable", false}}, "open"},
  };
  for (const Case& tc : table) {
    SCOPED_TRACE(tc.name);
    Json config = {{"actions", "allocate"},
                   {"tiers", {{{"plugins", {{{"name", "predicates"}, {"arguments", tc.args}},
                                            "nodeorder"}}}}}};
    auto r = RunOnce(scenario, config);
    ASSERT_TRUE(r.ok()) << r.status();
    if (tc.node.empty()) {
      EXPECT_TRUE(r->binds.empty());
      EXPECT_TRUE(Contains(r->pending.at("pinned"), "node affinity/selector"));
      EXPECT_TRUE(Contains(r->pending.at("pinned"), "untolerated taint"));
    } else {
      ASSERT_EQ(r->binds.size(), 1u);
      EXPECT_EQ(r->binds[0].allocation.node, tc.node);
    }
  }
  Json bad = {{"actions", "allocate"},
              {"tiers", {{{"plugins", {{{"name", "predicates"},
                                        {"arguments", {{"predicate.NodeAffinityEnable", "no"}}}}}}}}}};
  EXPECT_TRUE(Contains(ConfigError(bad), "predicate.NodeAffinityEnable"));
  Json typo = {{"actions", "allocate"},
               {"tiers", {{{"plugins", {"predicates(predicate.TaintTolerationEnabled=false)"}}}}}};
  EXPECT_TRUE(Contains(ConfigError(typo), "did you mean \"predicate.TaintTolerationEnable\""));
}

// --- The stock configuration runs ------------------------------------------------------------------

TEST(VolcanoConfigTest, StockConfigurationRunsAGang) {
  Json scenario = {{"nodes", {VolcanoGpuNode("n1", 4), VolcanoGpuNode("n2", 4)}},
                   {"jobs", {MakeJob("gang", 2, {{"cpu", "1"}, {"nvidia.com/gpu", 2}}),
                             MakeJob("huge", 1, {{"nvidia.com/gpu", 16}})}}};
  auto r = RunOnce(scenario, VolcanoStockConfig());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->binds.size(), 2u);
  // 16 GPUs exceed 1.2 x 8: overcommit (and proportion) keep "huge" out of the queue.
  EXPECT_TRUE(Contains(r->pending.at("huge"), "not admitted"));
}

}  // namespace
}  // namespace gpufleet::engine
