// The callback-point table and observed answers: a plugin answers what it registers on a session
// (not what it declares), the configuration check and every cycle read that, and Volcano's
// switches name the points of the one table.
#include <set>
#include <string>
#include <vector>

#include "gpufleet/engine/config.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/plugin_switches.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gtest/gtest.h"

namespace gpufleet::engine {
namespace {

// Test only: answers predicates (accepting every node) when `answer` is true. With
// `only_when_empty` it registers only on a session without nodes, breaking the rule that a plugin
// registers from its arguments alone, so that a cycle sees a different plugin than the check.
class OptionalPredicate : public Plugin {
 public:
  OptionalPredicate(bool answer, bool only_when_empty)
      : answer_(answer), only_when_empty_(only_when_empty) {}
  void OnSessionOpen(Session& s) override {
    if (!answer_ || (only_when_empty_ && s.state().num_nodes() > 0)) return;
    s.AddPredicateFn(name(), [](const TaskInfo&, int) { return FitResult::Ok(); });
  }

 private:
  bool answer_, only_when_empty_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "test-optional-predicate",
     .description = "test only: answers predicates when asked to",
     .params = {{"answer", ParamType::kBool, false, "register a predicate"},
                {"only_when_empty", ParamType::kBool, false,
                 "register it only on a session without nodes"}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(
          new OptionalPredicate(*p.Get<bool>("answer"), *p.Get<bool>("only_when_empty")));
    });

std::vector<std::string> AnswersOf(const std::string& name, const Json& args = Json::object(),
                                  PointSet disabled = {}) {
  auto answers = ObserveAnswers(name, args, disabled);
  EXPECT_TRUE(answers.ok()) << answers.status();
  return answers.ok() ? PointNames(*answers) : std::vector<std::string>{};
}

TEST(CallbackPointsTest, OneEntryPerPointWithUniqueNames) {
  std::set<std::string> names, methods;
  for (int i = 0; i < kNumPoints; ++i) {
    const CallbackPoint& p = CallbackPoints()[i];
    EXPECT_EQ(static_cast<int>(p.point), i) << p.name << " is out of order";
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    if (p.python_method != nullptr) EXPECT_TRUE(methods.insert(p.python_method).second);
    EXPECT_EQ(FindPoint(p.name), p.point);
    EXPECT_NE(std::string(SignatureText(p.signature)), "");
    EXPECT_NE(std::string(CombineText(p.combine)), "");
  }
  EXPECT_EQ(static_cast<int>(CallbackPoints().size()), kNumPoints);
  EXPECT_FALSE(FindPoint("predicate").has_value());
  // A switch that gates a point gates exactly one, and a point has at most one switch.
  std::set<Point> gated;
  for (const PluginSwitch& sw : PluginSwitches())
    if (sw.point) EXPECT_TRUE(gated.insert(*sw.point).second) << sw.key;
  EXPECT_EQ(std::string(SwitchOf(Point::kPredicates)->key), "enablePredicate");
  EXPECT_EQ(SwitchOf(Point::kJobValid), nullptr);
}

TEST(CallbackPointsTest, PluginsAnswerWhatTheyRegister) {
  EXPECT_EQ(AnswersOf("gang"), (std::vector<std::string>{"job-order", "preemptable", "reclaimable",
                                                        "job-ready", "job-valid"}));
  EXPECT_EQ(AnswersOf("predicates"), std::vector<std::string>{"predicates"});
  EXPECT_EQ(AnswersOf("deviceshare"), (std::vector<std::string>{"node-score", "device-strategy"}));
  // What an argument turns off is not answered: weight 0 registers no score.
  EXPECT_EQ(AnswersOf("deviceshare", {{"weight", 0}}), std::vector<std::string>{"device-strategy"});
  EXPECT_EQ(AnswersOf("binpack", {{"binpack.weight", 0}}), std::vector<std::string>{});
  // Nor is what a switch turns off.
  PointSet off;
  off.set(static_cast<int>(Point::kPreemptable));
  EXPECT_EQ(AnswersOf("gang", Json::object(), off),
            (std::vector<std::string>{"job-order", "reclaimable", "job-ready", "job-valid"}));
  EXPECT_EQ(AnswersOf("test-optional-predicate"), std::vector<std::string>{});
  EXPECT_EQ(AnswersOf("test-optional-predicate", {{"answer", true}}),
            std::vector<std::string>{"predicates"});
  EXPECT_EQ(PluginsAnswering(Point::kOverused),
            (std::vector<std::string>{"proportion", "queuetree"}));
}

TEST(CallbackPointsTest, AnyPluginThatRegistersAPredicateServesAllocate) {
  auto config = [](bool answer) {
    return Json{{"actions", "allocate"},
                {"tiers", {{{"plugins", {"gang", {{"name", "test-optional-predicate"},
                                                  {"arguments", {{"answer", answer}}}}}}}}}};
  };
  EXPECT_TRUE(ConfigFromJson(config(true)).ok());
  auto refused = ConfigFromJson(config(false));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "\"allocate\" needs a plugin that answers \"predicates\" (registered: predicates)"),
            std::string::npos)
      << refused.status();
}

TEST(CallbackPointsTest, ACycleChecksWhatThePluginsRegisteredThisTime) {
  Scheduler s;
  ASSERT_TRUE(s.Configure({{"actions", "allocate"},
                           {"tiers", {{{"plugins", {{{"name", "test-optional-predicate"},
                                                     {"arguments", {{"answer", true},
                                                                    {"only_when_empty", true}}}}}}}}}})
                  .ok());
  absl::Status loaded = LoadScenario(Json::parse(R"({
      "nodes": [{"name": "n1", "cpu": "8", "memory": "32Gi",
                 "gpus": {"count": 1, "memory": "80Gi"}}],
      "jobs": [{"name": "j", "replicas": 1, "requests": {"nvidia.com/gpu": 1}}]})"), &s);
  ASSERT_TRUE(loaded.ok()) << loaded;
  auto cycle = s.RunCycleAt(1.0);
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.status().message().find("\"allocate\" needs a plugin that answers \"predicates\""),
            std::string::npos)
      << cycle.status();
  EXPECT_EQ(s.cycles(), 0);  // nothing applied
  EXPECT_EQ(s.cluster().FindAllocation("j-0"), nullptr);
}

}  // namespace
}  // namespace gpufleet::engine
