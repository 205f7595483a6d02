// Conformance: every registered placement strategy, engine plugin, engine action and job-time
// policy is built from what its registration declares (defaults, and examples for parameters
// without one) and run on a small generic scenario. The suites are parameterised over the
// registries' names, so a new registrant is tested the moment it registers.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/policies/job_time_policy.h"
#include "gpufleet/sim/simulator.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::IsOk;
using test::MakeNode;
using test::MakePod;

template <typename T>
typename Registry<T>::Record DeclaredInfo(const std::string& name) {
  auto info = Registry<T>::Global().Info(name);
  EXPECT_TRUE(info.ok()) << info.status();
  return info.ok() ? *info : typename Registry<T>::Record{};
}

// Every declared default has the declared type and keeps to the declared range, names are unique,
// and every help line is filled.
template <typename T>
void ExpectWellDeclared(const std::string& name) {
  auto info = DeclaredInfo<T>(name);
  EXPECT_EQ(info.name, name);
  EXPECT_FALSE(info.description.empty());
  std::vector<std::string> seen;
  for (const ParamSpec& p : info.params) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.help.empty());
    EXPECT_EQ(std::count(seen.begin(), seen.end(), p.name), 0) << "declared twice";
    seen.push_back(p.name);
    for (const Json& v : {p.default_value, p.example}) {
      if (v.is_null()) continue;
      EXPECT_TRUE(HasParamType(v, p.type));
      EXPECT_TRUE(CheckParamRange(p, v, name).ok()) << v.dump() << " is outside " << RangeText(p);
    }
    if (!p.one_of.empty()) EXPECT_EQ(p.type, ParamType::kString);
  }
  // A misspelt parameter is an error that names it.
  if (!info.open_params) {
    Json typo = info.ExampleParams();
    typo["no_such_parameter"] = 1;
    auto built = Registry<T>::Global().Create(name, typo);
    ASSERT_FALSE(built.ok());
    EXPECT_TRUE(absl::StrContains(built.status().message(), "no_such_parameter"));
  }
}

// The object built reads its name from its registration.
template <typename T>
std::unique_ptr<T> BuildFromDeclarations(const std::string& name) {
  auto built = Registry<T>::Global().Create(name, DeclaredInfo<T>(name).ExampleParams());
  EXPECT_TRUE(built.ok()) << built.status();
  if (!built.ok()) return nullptr;
  EXPECT_EQ((*built)->name(), name);
  return *std::move(built);
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string out;
  for (char c : info.param) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// --- Placement strategies ------------------------------------------------------------------------

class StrategyConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(StrategyConformance, PlacesWhatFitsAndRefusesWhatFitsNowhere) {
  ExpectWellDeclared<PlacementStrategy>(GetParam());
  std::unique_ptr<PlacementStrategy> strategy =
      BuildFromDeclarations<PlacementStrategy>(GetParam());
  ASSERT_NE(strategy, nullptr);
  const StrategyTraits& traits = DeclaredInfo<PlacementStrategy>(GetParam()).traits;
  EXPECT_EQ(strategy->Deterministic(), traits.deterministic);
  EXPECT_EQ(strategy->ConcurrentSafe(), traits.concurrent_safe);
  ClusterState c;
  Placer placer;
  for (const char* node : {R"({"name":"a","cpu":"32","memory":"256Gi",
                               "gpus":{"count":4,"model":"A100","memory":"80Gi"}})",
                           R"({"name":"b","cpu":"32","memory":"256Gi",
                               "gpus":{"count":4,"model":"A100","memory":"80Gi"}})"})
    ASSERT_TRUE(IsOk(c.AddNode(MakeNode(node))));
  for (int i = 0; i < 3; ++i) {
    const Pod pod = MakePod(absl::StrFormat(
        R"({"name":"fits-%d","requests":{"cpu":"2","nvidia.com/gpu":2}})", i));
    Placement r = test::PlaceWith(placer, c, pod, *strategy);
    ASSERT_TRUE(r.ok()) << r.reason;
    EXPECT_EQ(r.allocation.devices.size(), 2u);
    ASSERT_TRUE(IsOk(c.CheckInvariants()));
  }
  Placement none = test::PlaceWith(
      placer, c, MakePod(R"({"name":"too-big","requests":{"cpu":"2","nvidia.com/gpu":5}})"),
      *strategy);
  EXPECT_FALSE(none.ok());
  EXPECT_FALSE(none.reason.empty());
  // The last two free GPUs are on one node; a 2-GPU pod still fits, a third does not.
  const Pod last = MakePod(R"({"name":"last","requests":{"cpu":"2","nvidia.com/gpu":2}})");
  const Pod over = MakePod(R"({"name":"over","requests":{"cpu":"2","nvidia.com/gpu":1}})");
  EXPECT_TRUE(test::PlaceWith(placer, c, last, *strategy).ok());
  EXPECT_FALSE(test::PlaceWith(placer, c, over, *strategy).ok());
  EXPECT_TRUE(IsOk(c.CheckInvariants()));
}

// A strategy that declares itself deterministic answers the same on an unchanged node: the same
// score for the same pod, and the same devices.
TEST_P(StrategyConformance, DeclaredDeterminismHolds) {
  std::unique_ptr<PlacementStrategy> strategy =
      BuildFromDeclarations<PlacementStrategy>(GetParam());
  ASSERT_NE(strategy, nullptr);
  if (!strategy->Deterministic()) GTEST_SKIP() << "declares no determinism";
  ClusterState c;
  ASSERT_TRUE(IsOk(c.AddNode(MakeNode(R"({"name":"a","cpu":"32","memory":"256Gi",
                                          "gpus":{"count":4,"model":"A100","memory":"80Gi"}})"))));
  Placer placer;
  ASSERT_TRUE(test::PlaceWith(placer, c, MakePod(R"({"name":"p","requests":{"cpu":"2","nvidia.com/gpu":1}})"),
                              *strategy).ok());
  const Pod pod = MakePod(R"({"name":"q","requests":{"cpu":"2","nvidia.com/gpu":2}})");
  const NodeView view = c.View(0);
  const double first = strategy->ScoreNode(view, pod, {});
  std::vector<int> chosen_first, chosen_again;
  std::vector<std::vector<int>> domains(1);
  for (int i = 0; i < view.num_devices(); ++i)
    if (view.untouched(i)) domains[0].push_back(i);
  const bool fits = strategy->ChooseDevices(view, pod.devices[0], domains, &chosen_first);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(strategy->ScoreNode(view, pod, {}), first);
    chosen_again.clear();
    EXPECT_EQ(strategy->ChooseDevices(view, pod.devices[0], domains, &chosen_again), fits);
    EXPECT_EQ(chosen_again, chosen_first);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, StrategyConformance,
                         ::testing::ValuesIn(Registry<PlacementStrategy>::Global().Names()),
                         ParamName);

// --- Engine plugins and actions ------------------------------------------------------------------

// A generic engine scenario: two 4-GPU nodes, one low-priority job running, two queues, a gang
// that fits, a best-effort task and a job that fits nowhere.
Json EngineScenario() {
  auto node = [](const std::string& name) {
    return Json{{"name", name}, {"cpu", "64"}, {"memory", "512Gi"},
                {"gpus", {{"count", 4}, {"model", "A100"}, {"memory", "80Gi"}}}};
  };
  auto job = [](const std::string& name, int replicas, int gpus, const std::string& queue,
                int priority) {
    return Json{{"name", name}, {"queue", queue}, {"priority", priority}, {"replicas", replicas},
                {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus}}}};
  };
  Json running = job("running", 2, 1, "a", 1);
  running["running"] = {"n1", "n1"};
  running["min_available"] = 1;
  Json best_effort = {{"name", "best-effort"}, {"queue", "b"}, {"replicas", 1}};
  return {{"nodes", {node("n1"), node("n2")}},
          {"queues", {{{"name", "a"}, {"weight", 1}}, {{"name", "b"}, {"weight", 1}}}},
          {"jobs", {running, job("gang", 2, 2, "b", 10), best_effort, job("huge", 1, 16, "a", 5)}}};
}

// The default tiers, plus `extra` plugins in the second tier.
Json Tiers(const std::vector<std::string>& extra) {
  Json config = engine::DefaultConfigJson();
  for (const std::string& p : extra) {
    bool present = false;
    for (const Json& tier : config["tiers"])
      for (const Json& e : tier["plugins"]) present |= e["name"] == p;
    if (!present) config["tiers"][1]["plugins"].push_back({{"name", p}});
  }
  return config["tiers"];
}

// Runs three cycles; each must succeed and leave the accounting consistent. Returns every bind
// and eviction of the run.
engine::CycleResult RunCycles(const Json& config) {
  engine::Scheduler s;
  absl::Status configured = s.Configure(config);
  EXPECT_TRUE(configured.ok()) << configured << " for " << config.dump();
  absl::Status loaded = engine::LoadScenario(EngineScenario(), &s);
  EXPECT_TRUE(loaded.ok()) << loaded;
  engine::CycleResult all;
  for (int cycle = 0; cycle < 3; ++cycle) {
    auto r = s.RunCycleAt(10.0 * (cycle + 1));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) break;
    EXPECT_TRUE(IsOk(s.cluster().CheckInvariants()));
    all.binds.insert(all.binds.end(), r->binds.begin(), r->binds.end());
    all.evictions.insert(all.evictions.end(), r->evictions.begin(), r->evictions.end());
    for (const auto& b : r->binds) EXPECT_NE(b.job, "huge") << "a job that fits nowhere was bound";
  }
  return all;
}

// For each point in `needs`, a registered plugin that answers it (observed from its defaults).
std::vector<std::string> Providers(const engine::PointSet& needs) {
  std::vector<std::string> out;
  for (const engine::CallbackPoint& p : engine::CallbackPoints()) {
    if (!needs.test(static_cast<int>(p.point))) continue;
    std::vector<std::string> answering = engine::PluginsAnswering(p.point);
    if (!answering.empty()) out.push_back(answering.front());
  }
  return out;
}

engine::PointSet NeedsOf(const std::vector<engine::Point>& needs) {
  engine::PointSet out;
  for (engine::Point p : needs) out.set(static_cast<int>(p));
  return out;
}

class PluginConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(PluginConformance, RunsCyclesWithTheDefaultActions) {
  ExpectWellDeclared<engine::Plugin>(GetParam());
  ASSERT_NE(BuildFromDeclarations<engine::Plugin>(GetParam()), nullptr);
  auto info = DeclaredInfo<engine::Plugin>(GetParam());
  std::vector<std::string> extra = Providers(NeedsOf(info.traits.needs));
  extra.push_back(GetParam());
  Json tiers = Tiers(extra);
  // This plugin with its declared parameters.
  for (Json& tier : tiers)
    for (Json& e : tier["plugins"])
      if (e["name"] == GetParam()) e["arguments"] = info.ExampleParams();
  engine::CycleResult r =
      RunCycles({{"actions", "enqueue, allocate, backfill"}, {"tiers", tiers}});
  // The gang fits and the defaults place it; no plugin in the tiers may stop that here.
  int gang = 0;
  for (const auto& b : r.binds) gang += b.job == "gang";
  EXPECT_EQ(gang, 2);
  EXPECT_TRUE(r.evictions.empty()) << "allocate and backfill never evict";
}

INSTANTIATE_TEST_SUITE_P(Registered, PluginConformance,
                         ::testing::ValuesIn(Registry<engine::Plugin>::Global().Names()),
                         ParamName);

class ActionConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(ActionConformance, RunsCyclesAndKeepsToItsTraits) {
  ExpectWellDeclared<engine::Action>(GetParam());
  ASSERT_NE(BuildFromDeclarations<engine::Action>(GetParam()), nullptr);
  auto info = DeclaredInfo<engine::Action>(GetParam());
  Json actions = Json::array();
  if (!info.traits.admits_jobs) actions.push_back("enqueue");
  actions.push_back({{"name", GetParam()}, {"arguments", info.ExampleParams()}});
  engine::CycleResult r =
      RunCycles({{"actions", actions}, {"tiers", Tiers(Providers(info.traits.Needs()))}});
  if (!info.traits.places_tasks) EXPECT_TRUE(r.binds.empty()) << "binds without places_tasks";
  if (!info.traits.evicts) EXPECT_TRUE(r.evictions.empty()) << "evicts without evicts";
}

INSTANTIATE_TEST_SUITE_P(Registered, ActionConformance,
                         ::testing::ValuesIn(Registry<engine::Action>::Global().Names()),
                         ParamName);

// Every point an action or plugin needs is answered by some registered plugin.
TEST(EngineRegistryConformance, EveryNeedHasAProvider) {
  std::vector<std::pair<std::string, engine::PointSet>> all;
  for (const auto& r : Registry<engine::Action>::Global().Infos())
    all.push_back({r.name, r.traits.Needs()});
  for (const auto& r : Registry<engine::Plugin>::Global().Infos())
    all.push_back({r.name, NeedsOf(r.traits.needs)});
  for (const auto& [name, needs] : all)
    EXPECT_EQ(Providers(needs).size(), needs.count())
        << name << " needs " << absl::StrJoin(engine::PointNames(needs), ", ")
        << " but no plugin answers one of them";
}

// --- Job-time policies ---------------------------------------------------------------------------

class JobTimePolicyConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(JobTimePolicyConformance, FinishesEveryJobOfATinyTrace) {
  ExpectWellDeclared<jobtime::JobTimePolicy>(GetParam());
  std::unique_ptr<jobtime::JobTimePolicy> policy =
      BuildFromDeclarations<jobtime::JobTimePolicy>(GetParam());
  ASSERT_NE(policy, nullptr);
  auto pool = jobtime::GpuPool::FromJson(Json::array(
      {{{"name", "v100"}, {"count", 4}, {"gpus_per_node", 4}},
       {{"name", "k80"}, {"count", 4}, {"gpus_per_node", 4}}}));
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::vector<jobtime::JobSpec> jobs;
  for (int i = 0; i < 8; ++i) {
    jobtime::JobSpec s;
    s.id = i;
    s.submit_time = 30.0 * i;
    s.num_gpu = 1 << (i % 3);
    s.duration = 200 + 150 * (i % 4);  // every policy may read durations; some need them
    s.speed = {1.0, 0.5};
    jobs.push_back(s);
  }
  sim::SimOptions options;
  options.placement = "binpack";
  auto result = sim::Simulate(*pool, jobs, *policy, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->leftover_allocations, 0);
  const bool preemptive = policy->traits().preemptive;
  for (const jobtime::Job& j : result->jobs) {
    EXPECT_EQ(j.state, jobtime::JobState::kDone) << "job " << j.spec.id;
    EXPECT_GE(j.end_time, j.spec.submit_time + j.spec.duration) << "job " << j.spec.id;
    if (!preemptive) EXPECT_EQ(j.preemptions + j.migrations, 0) << "job " << j.spec.id;
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, JobTimePolicyConformance,
                         ::testing::ValuesIn(Registry<jobtime::JobTimePolicy>::Global().Names()),
                         ParamName);

}  // namespace
}  // namespace gpufleet
