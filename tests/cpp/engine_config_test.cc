// Configuration: names, arguments and inconsistent settings are errors with clear messages; the
// registries hold the expected names without duplicates.
#include "gtest/gtest.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/config.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"

namespace gpufleet::engine {
namespace {

std::string Error(const std::string& text) {
  auto c = ConfigFromJson(Json::parse(text));
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(EngineConfigTest, RegistriesHoldTheBuiltIns) {
  for (const char* n : {"binpack", "conformance", "deviceshare", "drf", "gang", "nodeorder",
                        "overcommit", "predicates", "priority", "proportion", "reservation"})
    EXPECT_TRUE(Registry<Plugin>::Global().Contains(n)) << n;
  for (const char* n : {"allocate", "backfill", "enqueue", "preempt", "reclaim"})
    EXPECT_TRUE(Registry<Action>::Global().Contains(n)) << n;
  EXPECT_TRUE(Registry<Plugin>::Global().DuplicateNames().empty());
  EXPECT_TRUE(Registry<Action>::Global().DuplicateNames().empty());
}

TEST(EngineConfigTest, DefaultAndListForms) {
  EXPECT_TRUE(ConfigFromJson(DefaultConfigJson()).ok());
  auto c = ConfigFromJson(Json::parse(R"J({"actions": ["allocate", {"name": "backfill"}],
      "tiers": [{"plugins": ["gang", "predicates", "nodeorder(binpack=2, spread=1)"]}]})J"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->actions.size(), 2u);
  EXPECT_EQ(c->tiers[0][2].args["spread"], 1);
}

TEST(EngineConfigTest, ErrorsNameTheProblem) {
  const std::string tiers = R"J("tiers": [{"plugins": ["gang", "predicates", "proportion", "priority"]}])J";
  auto has = [](const std::string& got, const std::string& want) {
    return got.find(want) != std::string::npos ? ::testing::AssertionSuccess()
                                               : ::testing::AssertionFailure() << got;
  };
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, shuffle", )J" + tiers + "}"),
                  "actions[1]: unknown action \"shuffle\"; known: allocate, backfill"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates", "magic"]}]})J"),
                  "tiers[0].plugins[2]: unknown plugin \"magic\""));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", "nodeorder(binpak=1)"]}]})J"),
                  "nodeorder: unknown parameter \"binpak\" (did you mean \"binpack\"?)"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", "nodeorder(binpack=\"lots\")"]}]})J"),
                  "nodeorder: parameter \"binpack\" has the wrong type (\"lots\"; expected number)"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", "nodeorder(binpack=-1)"]}]})J"),
                  "tiers[0].plugins[1]: nodeorder: \"binpack\" must be a finite number >= 0, got -1"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", {"name": "deviceshare", "arguments": {"strategy": "nope"}}]}]})J"),
                  "deviceshare: strategy: unknown placement strategy \"nope\""));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, enqueue", )J" + tiers + "}"),
                  "\"enqueue\" must be the first action"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, allocate", )J" + tiers + "}"),
                  "action \"allocate\" is listed twice"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates"]}, {"plugins": ["gang"]}]})J"),
                  "plugin \"gang\" appears twice"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang"]}]})J"),
                  "\"allocate\" needs a plugin that answers \"predicates\" (registered: predicates)"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, reclaim", "tiers": [{"plugins": ["gang", "predicates"]}]})J"),
                  "\"reclaim\" needs a plugin that answers \"overused\" (registered: proportion, queuetree)"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, preempt", "tiers": [{"plugins": ["predicates", "proportion"]}]})J"),
                  "\"preempt\" needs a plugin that answers \"preemptable\" (registered: conformance, drf, gang, priority, queuetree)"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", "reservation"]}]})J"),
                  "\"reservation\" needs a plugin that answers \"job-ready\" (registered: gang)"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates", "reservation(after_cycles=-2)"]}]})J"),
                  "reservation: \"after_cycles\" must be >= 0, got -2"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": []})J"), "\"tiers\" must be a non-empty list"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tier": []})J"),
                  "unknown field \"tier\"; did you mean \"tiers\"?"));
  EXPECT_TRUE(has(Error(R"J({"actions": "", )J" + tiers + "}"), "\"actions\" is empty"));
}

TEST(EngineConfigTest, SchedulerKeepsItsConfigurationOnError) {
  Scheduler s;
  const Json before = s.config().ToJson();
  EXPECT_FALSE(s.Configure(Json::parse(R"J({"actions": "allocate", "tiers": [{"plugins": ["nope"]}]})J")).ok());
  EXPECT_EQ(s.config().ToJson(), before);
}

}  // namespace
}  // namespace gpufleet::engine

namespace gpufleet::engine {
namespace {

// What a scenario can change: nodes and allocations, queues, jobs.
struct SchedulerView {
  ClusterState cluster;
  Json queues = Json::array();
  std::vector<std::string> jobs;
  explicit SchedulerView(const Scheduler& s) : cluster(s.cluster()) {
    for (const Queue& q : s.Queues()) queues.push_back(QueueToJson(q));
    for (const JobState& j : s.Jobs()) jobs.push_back(j.name);
  }
  bool operator==(const SchedulerView& o) const {
    return cluster == o.cluster && queues == o.queues && jobs == o.jobs;
  }
};

// A malformed scenario anywhere (unknown fields with a did-you-mean, bounds, names taken) leaves
// the scheduler exactly as it was.
TEST(EngineScenarioStrictTest, BadScenariosChangeNothing) {
  const Json node = Json::parse(R"({"name":"n1","cpu":"16","memory":"64Gi",
                                     "gpus":{"count":4,"memory":"80Gi"}})");
  const Json job = Json::parse(R"({"name":"j","replicas":1,"requests":{"nvidia.com/gpu":"1"}})");
  struct Case {
    const char* name;
    Json scenario;
    std::vector<std::string> parts;
  };
  auto with = [](Json j, const char* key, Json value) {
    j[key] = std::move(value);
    return j;
  };
  const Case cases[] = {
      {"misspelt top-level key", {{"nodes", Json::array()}, {"job", Json::array()}},
       {"scenario: unknown field \"job\"; did you mean \"jobs\"?"}},
      {"misspelt job field",
       {{"nodes", {with(node, "name", "n2")}}, {"jobs", {with(job, "min_avaliable", 1)}}},
       {"jobs[0]: job j: unknown field \"min_avaliable\"; did you mean \"min_available\"?"}},
      {"misspelt task-template field",
       {{"nodes", {with(node, "name", "n2")}}, {"jobs", {with(job, "requets", Json::object())}}},
       {"jobs[0]: job j: unknown field \"requets\"; did you mean \"requests\"?"}},
      {"misspelt queue field",
       {{"nodes", {with(node, "name", "n2")}}, {"queues", {{{"name", "q"}, {"wieght", 1}}}}},
       {"queues[0]: queue q: unknown field \"wieght\"; did you mean \"weight\"?"}},
      {"misspelt capability", {{"queues", {{{"name", "q"}, {"capability", {{"gpus", 1}}}}}}},
       {"queue q: capability.gpus: unknown resource; did you mean \"gpu\"?"}},
      {"too many replicas", {{"jobs", {with(job, "replicas", 100001)}}},
       {"job j: replicas: 100001 tasks is more than the 100000"}},
      {"node name taken", {{"nodes", {with(node, "name", "n2"), node}}},
       {"nodes[1]: node n1 already exists"}},
      {"job name taken", {{"jobs", {with(job, "name", "k"), with(job, "name", "k")}}},
       {"jobs[1]: job k already exists"}},
      // Judged only while applying: what was applied before the failure is undone.
      {"unknown queue", {{"nodes", {with(node, "name", "n2")}},
                         {"queues", {{{"name", "q"}, {"weight", 2}}, {{"name", "default"}, {"weight", 5}}}},
                         {"jobs", {with(job, "name", "k"), with(with(job, "name", "m"), "queue", "nope")}}},
       {"jobs[1]", "nope"}},
      {"running task that does not fit", {{"nodes", {with(node, "name", "n2")}},
                                          {"jobs", {with(with(job, "name", "k"), "running", {"n2"}),
                                                    with(with(with(job, "name", "m"), "running", {"n2"}),
                                                         "requests", {{"cpu", "100000"}})}}},
       {"jobs[1]"}},
      {"fraction of a GPU", {{"nodes", {with(node, "name", "n2")}},
                             {"jobs", {with(job, "requests", {{"nvidia.com/gpu", "0.5"}})}}},
       {"jobs[0]", "nvidia.com/gpu", "\"0.5\"", "whole numbers only"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scheduler s;
    ASSERT_TRUE(LoadScenario({{"nodes", {node}}, {"jobs", {with(job, "name", "existing")}}}, &s).ok());
    const SchedulerView before(s);
    absl::Status st = LoadScenario(c.scenario, &s);
    ASSERT_FALSE(st.ok());
    for (const std::string& p : c.parts)
      EXPECT_NE(st.message().find(p), std::string::npos) << st << " lacks " << p;
    EXPECT_TRUE(SchedulerView(s) == before);
  }
}

TEST(EngineConfigTest, MisspeltEntryFieldsSuggestTheRightOne) {
  EXPECT_EQ(Error(R"J({"actions": [{"name": "allocate", "argument": {}}],
                      "tiers": [{"plugins": ["predicates"]}]})J"),
            "actions[0]: unknown field \"argument\"; did you mean \"arguments\"?");
  EXPECT_EQ(Error(R"J({"actions": "allocate", "tiers": [{"plugin": ["predicates"]}]})J"),
            "tiers[0]: unknown field \"plugin\"; did you mean \"plugins\"?");
}

}  // namespace
}  // namespace gpufleet::engine
