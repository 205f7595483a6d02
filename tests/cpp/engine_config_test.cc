// Configuration: names, arguments and inconsistent settings are errors with clear messages; the
// registries hold the expected names without duplicates.
#include "gtest/gtest.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/config.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scheduler.h"

namespace gpufleet::engine {
namespace {

std::string Error(const std::string& text) {
  auto c = ConfigFromJson(Json::parse(text));
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(EngineConfigTest, RegistriesHoldTheBuiltIns) {
  for (const char* n : {"deviceshare", "drf", "gang", "nodeorder", "predicates", "priority",
                        "proportion", "reservation"})
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
                  "unknown parameter"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", "nodeorder(binpack=-1)"]}]})J"),
                  "weights must be finite and >= 0"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", {"name": "deviceshare", "arguments": {"strategy": "nope"}}]}]})J"),
                  "deviceshare: strategy: unknown placement strategy \"nope\""));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, enqueue", )J" + tiers + "}"),
                  "\"enqueue\" must be the first action"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, allocate", )J" + tiers + "}"),
                  "action \"allocate\" is listed twice"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates"]}, {"plugins": ["gang"]}]})J"),
                  "plugin \"gang\" appears twice"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang"]}]})J"),
                  "need the \"predicates\" plugin"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, reclaim", "tiers": [{"plugins": ["gang", "predicates"]}]})J"),
                  "\"reclaim\" needs the \"proportion\" plugin"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate, preempt", "tiers": [{"plugins": ["predicates", "proportion"]}]})J"),
                  "\"preempt\" needs a plugin that names victims"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["predicates", "reservation"]}]})J"),
                  "needs the \"gang\" plugin"));
  EXPECT_TRUE(has(Error(R"J({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates", "reservation(after_cycles=-2)"]}]})J"),
                  "after_cycles must be >= 0"));
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
