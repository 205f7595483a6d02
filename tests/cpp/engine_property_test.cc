// Property: whatever the jobs, queues, priorities and actions, no cycle leaves a gang partly
// bound, over-commits a device, or binds a task twice; a failed cycle changes nothing.
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"

namespace gpufleet::engine {
namespace {

TEST(EnginePropertyTest, NoPartialGangNoOvercommit) {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* configs[] = {
      R"J({"actions": "enqueue, allocate, backfill", "tiers": [{"plugins": ["priority", "gang"]},
          {"plugins": ["drf", "predicates", "proportion", "nodeorder", "deviceshare", "reservation(after_cycles=1)"]}]})J",
      R"J({"actions": "enqueue, allocate, preempt, reclaim, backfill", "tiers": [{"plugins": ["priority", "gang"]},
          {"plugins": ["drf", "predicates", "proportion", "nodeorder(binpack=0, spread=1)", "deviceshare(strategy=spread)"]}]})J",
      R"J({"actions": "allocate, reclaim, preempt", "tiers": [{"plugins": ["drf", "priority", "predicates", "proportion", "gang"]}]})J",
  };
  for (int trial = 0; trial < 24; ++trial) {
    Scheduler s;
    ASSERT_TRUE(s.Configure(Json::parse(configs[trial % 3])).ok());
    Json scenario;
    for (int n = 0, nodes = pick(1, 4); n < nodes; ++n)
      scenario["nodes"].push_back({{"name", absl::StrCat("n", n)}, {"cpu", std::to_string(pick(4, 32))},
                                   {"memory", "256Gi"}, {"pods", pick(3, 20)},
                                   {"gpus", {{"count", pick(0, 8)}, {"model", "A100"}, {"memory", "80Gi"}}}});
    for (int q = 0; q < 3; ++q)
      scenario["queues"].push_back({{"name", absl::StrCat("q", q)}, {"weight", pick(0, 3)},
                                    {"reclaimable", pick(0, 4) > 0}});
    int next = 0;
    auto job = [&]() {
      Json j = {{"name", absl::StrCat("j", next)}, {"queue", absl::StrCat("q", pick(0, 2))},
                {"priority", pick(0, 3)}, {"creation", next}, {"replicas", pick(1, 6)}};
      ++next;
      int kind = pick(0, 3);
      if (kind == 0) j["requests"] = {{"cpu", "1"}, {"nvidia.com/gpu", pick(1, 2)}};
      if (kind == 1) j["requests"] = {{"cpu", "500m"}, {"koordinator.sh/gpu-core", 50}, {"koordinator.sh/gpu-memory-ratio", 50}};
      if (kind == 2) j["requests"] = {{"cpu", std::to_string(pick(1, 4))}};
      j["min_available"] = pick(1, j["replicas"].get<int>());
      return j;
    };
    for (int k = 0; k < 6; ++k) scenario["jobs"].push_back(job());
    ASSERT_TRUE(LoadScenario(scenario, &s).ok());
    for (int cycle = 0; cycle < 6; ++cycle) {
      auto r = s.RunCycle();
      ASSERT_TRUE(r.ok()) << "trial " << trial << " cycle " << cycle << ": " << r.status();
      ASSERT_TRUE(s.cluster().CheckInvariants().ok());
      std::set<std::string> bound;
      for (const auto& b : r->binds) EXPECT_TRUE(bound.insert(b.task).second) << b.task;
      for (const JobState& j : s.Jobs())
        EXPECT_TRUE(j.running == 0 || j.running >= j.min_available)
            << "trial " << trial << " cycle " << cycle << ": job " << j.name << " runs "
            << j.running << " of min " << j.min_available;
      // Churn: finish a random running job, add new ones.
      auto jobs = s.Jobs();
      if (!jobs.empty() && pick(0, 1)) ASSERT_TRUE(s.DeleteJob(jobs[pick(0, jobs.size() - 1)].name).ok());
      Json more;
      more["jobs"].push_back(job());
      ASSERT_TRUE(LoadScenario(more, &s).ok());
    }
  }
}

}  // namespace
}  // namespace gpufleet::engine

namespace gpufleet::engine {
namespace {

// A test-only plugin that turns node equivalence classes off, to compare against the full scan.
class NoNodeClasses : public Plugin {
 public:
  void OnSessionOpen(Session& s) override { s.DisableNodeClasses(); }
};
GPUFLEET_REGISTER(Plugin, {.name = "test-no-node-classes", .description = "test only"},
                  [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
                    return std::unique_ptr<Plugin>(new NoNodeClasses());
                  });

TEST(EnginePropertyTest, NodeClassesChooseExactlyLikeTheFullScan) {
  std::mt19937 rng(5);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 20; ++trial) {
    Json scenario;
    for (int n = 0, nodes = pick(2, 12); n < nodes; ++n) {
      Json node = {{"name", absl::StrCat("n", n)}, {"cpu", std::to_string(pick(1, 3) * 16)},
                   {"memory", "256Gi"}, {"gpus", {{"count", pick(1, 2) * 4}, {"model", "A100"}, {"memory", "80Gi"}}}};
      if (pick(0, 2) == 0) node["labels"] = {{"zone", absl::StrCat("z", pick(0, 1))}};
      scenario["nodes"].push_back(node);
    }
    for (int j = 0; j < 30; ++j) {
      Json job = {{"name", absl::StrCat("j", j)}, {"replicas", pick(1, 4)}, {"creation", j}, {"priority", pick(0, 2)}};
      int kind = pick(0, 2);
      if (kind == 0) job["requests"] = {{"cpu", "2"}, {"nvidia.com/gpu", pick(1, 2)}};
      if (kind == 1) job["requests"] = {{"cpu", "1"}, {"koordinator.sh/gpu-core", 25 * pick(1, 3)}, {"koordinator.sh/gpu-memory-ratio", 25 * pick(1, 3)}};
      if (kind == 2) job["requests"] = {{"cpu", std::to_string(pick(1, 8))}};
      if (pick(0, 3) == 0) job["node_selector"] = {{"zone", absl::StrCat("z", pick(0, 1))}};
      scenario["jobs"].push_back(job);
    }
    auto run = [&](bool classes) {
      Scheduler s;
      Json conf = DefaultConfigJson();
      if (!classes) conf["tiers"][1]["plugins"].push_back({{"name", "test-no-node-classes"}});
      EXPECT_TRUE(s.Configure(conf).ok());
      EXPECT_TRUE(LoadScenario(scenario, &s).ok());
      std::vector<std::string> out;
      for (int c = 0; c < 2; ++c) {
        auto r = s.RunCycle();
        EXPECT_TRUE(r.ok());
        for (const auto& b : r->binds) {
          std::string d;
          for (const auto& g : b.allocation.devices) d += absl::StrCat(g.minor, ":", g.core, ",");
          out.push_back(absl::StrCat(b.task, "@", b.allocation.node, "/", d));
        }
        for (const auto& [job, why] : r->pending) out.push_back(absl::StrCat(job, " ", why));
      }
      return out;
    };
    EXPECT_EQ(run(true), run(false)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace gpufleet::engine
