// DRA device classes as resources of queue trees: the devices the DRA ledger says a task's claims
// take of a class are charged to its queue's quota and limit on the class's name, and the
// resource's capacity is what the ledger says the slices publish.
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gpufleet/engine/dra_ledger.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "gtest/gtest.h"

namespace gpufleet::engine {
namespace {

constexpr char kClass[] = "gpu.nvidia.com";

Json KaiTree() {
  return {{"actions", "enqueue, allocate, treereclaim"},
          {"tiers",
           {{{"plugins", {"priority", "gang"}}},
            {{"plugins",
              {"predicates", {{"name", "queuetree"}, {"arguments", {{"policy", "kai"}}}},
               "nodeorder"}}}}}};
}

std::unique_ptr<Scheduler> TwoQueues() {
  auto s = std::make_unique<Scheduler>();
  EXPECT_TRUE(s->Configure(KaiTree()).ok());
  Json scenario = {
      {"nodes", {{{"name", "n1"}, {"cpu", "64"}, {"memory", "512Gi"}}}},
      {"queues",
       {{{"name", "a"}, {"quota", {{kClass, 1}}}, {"limit", {{kClass, 1}}}},
        {{"name", "b"}, {"quota", {{kClass, 3}}}}}},
      {"jobs", Json::array()}};
  absl::Status st = LoadScenario(scenario, s.get());
  EXPECT_TRUE(st.ok()) << st;
  return s;
}

void SubmitOne(Scheduler& s, const std::string& name, const std::string& queue) {
  auto j = JobFromJson({{"name", name}, {"queue", queue}, {"replicas", 1}, {"requests", {{"cpu", "1"}}}});
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_TRUE(s.SubmitJob(*j).ok());
}

std::map<std::string, int> Running(const Scheduler& s) {
  std::map<std::string, int> out;
  for (const JobState& j : s.Jobs()) out[j.queue] += j.running;
  return out;
}

TEST(DraQueueTreeTest, ClaimsAreChargedToTheirClassQuotaAndLimit) {
  auto s = TwoQueues();
  for (int i = 0; i < 2; ++i) SubmitOne(*s, absl::StrCat("a", i), "a");
  for (int i = 0; i < 2; ++i) SubmitOne(*s, absl::StrCat("b", i), "b");
  ASSERT_TRUE(s->dra().SetQueueResources({{kClass, 4}}).ok());
  for (const char* task : {"a0-0", "a1-0", "b0-0", "b1-0"})
    ASSERT_TRUE(s->dra().SetQueueDevices(task, {{kClass, 1}}).ok());
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Running(*s), (std::map<std::string, int>{{"a", 1}, {"b", 2}}));
  ASSERT_TRUE(r->pending.count("a1"));
  EXPECT_NE(r->pending.at("a1").find("queue a would exceed its gpu.nvidia.com limit (1)"),
            std::string::npos)
      << r->pending.at("a1");
}

TEST(DraQueueTreeTest, WithoutClaimsTheClassChargesNothing) {
  // The same jobs with no devices counted: a's limit on the class does not hold them back.
  auto s = TwoQueues();
  for (int i = 0; i < 2; ++i) SubmitOne(*s, absl::StrCat("a", i), "a");
  ASSERT_TRUE(s->RunCycle().ok());
  EXPECT_EQ(Running(*s)["a"], 2);
}

TEST(DraQueueTreeTest, BadQueueResourcesAreRefusedAndChangeNothing) {
  DraLedger ledger;
  ASSERT_TRUE(ledger.SetQueueResources({{kClass, 4}}).ok());
  absl::Status st = ledger.SetQueueResources({{"gpu", 4}});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("queue resource \"gpu\" is not a name"), std::string::npos) << st;
  EXPECT_EQ(ledger.queue_resources().size(), 1u);
  st = ledger.SetQueueDevices("t", {{"nic.example.com", 1}});
  EXPECT_NE(st.message().find("nic.example.com is not among the queue resources"), std::string::npos)
      << st;
  st = ledger.SetQueueDevices("t", {{kClass, -1}});
  EXPECT_NE(st.message().find("must be a number >= 0"), std::string::npos) << st;
  EXPECT_EQ(ledger.QueueDevices("t"), nullptr);
}

}  // namespace
}  // namespace gpufleet::engine
