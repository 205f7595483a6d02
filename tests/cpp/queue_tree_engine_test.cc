// Queue trees in the engine: the queuetree plugin and the treereclaim action on scenarios that
// restate the anchors' bugs (a queue unable to reclaim its guarantee: Kueue 6577, Volcano 4808;
// cohort quota not honoured in fair preemption: Kueue 9466; preemption loops: Kueue 3779), and
// bad queue input refused with the scheduler unchanged.
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "gtest/gtest.h"

namespace gpufleet::engine {
namespace {

Json GpuNode(const std::string& name, int gpus) {
  return {{"name", name}, {"cpu", "64"}, {"memory", "512Gi"},
          {"gpus", {{"count", gpus}, {"model", "A100"}, {"memory", "80Gi"}}}};
}

Json Job(const std::string& name, const std::string& queue, int replicas = 1, int gpus_each = 1,
         int priority = 0) {
  return {{"name", name}, {"queue", queue}, {"priority", priority}, {"replicas", replicas},
          {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus_each}}}};
}

Json TreeConfig(const std::string& policy,
                const std::string& actions = "enqueue, allocate, treereclaim") {
  return {{"actions", actions},
          {"tiers",
           {{{"plugins", {"priority", "gang"}}},
            {{"plugins",
              {"predicates", {{"name", "queuetree"}, {"arguments", {{"policy", policy}}}},
               "nodeorder"}}}}}};
}

std::unique_ptr<Scheduler> Make(const Json& scenario, const Json& config) {
  auto s = std::make_unique<Scheduler>();
  absl::Status c = s->Configure(config);
  EXPECT_TRUE(c.ok()) << c;
  absl::Status st = LoadScenario(scenario, s.get());
  EXPECT_TRUE(st.ok()) << st;
  return s;
}

absl::Status Submit(Scheduler& s, const Json& job) {
  auto j = JobFromJson(job);
  if (!j.ok()) return j.status();
  return s.SubmitJob(*j);
}

// GPUs each queue's running tasks hold.
std::map<std::string, double> RunningPerQueue(const Scheduler& s) {
  std::map<std::string, double> out;
  for (const JobState& j : s.Jobs())
    if (j.running > 0) out[j.queue] += j.running * s.FindJob(j.name)->tasks[0].GpuShare();
  return out;
}

std::map<std::string, int> Evicted(const CycleResult& r) {
  std::map<std::string, int> out;
  for (const EvictDecision& e : r.evictions) ++out[e.job];
  return out;
}

Json Q(const std::string& name, const std::string& parent, double gpu_quota) {
  Json q = {{"name", name}, {"quota", {{"gpu", gpu_quota}}}};
  if (!parent.empty()) q["parent"] = parent;
  return q;
}

TEST(QueueTreeEngineTest, BadQueueInputIsRefusedAndChangesNothing) {
  Scheduler s;
  auto add = [&](const Json& j) {
    auto q = QueueFromJson(j);
    return q.ok() ? s.AddQueue(*q) : q.status();
  };
  ASSERT_TRUE(add(Q("a", "", 4)).ok());
  ASSERT_TRUE(add(Q("b", "a", 2)).ok());
  const std::vector<Queue> before = s.Queues();
  auto same = [&] {
    std::vector<Queue> now = s.Queues();
    if (now.size() != before.size()) return false;
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i].name != before[i].name || now[i].parent != before[i].parent ||
          now[i].quota != before[i].quota)
        return false;
    return true;
  };
  // A cycle of parents.
  auto a = QueueFromJson(Q("a", "b", 4));
  ASSERT_TRUE(a.ok());
  absl::Status st = s.UpdateQueue(*a);
  EXPECT_TRUE(absl::StrContains(st.message(), "queues a -> b -> a form a cycle of parents")) << st;
  EXPECT_TRUE(same());
  // A child's guarantee above its parent's.
  st = add({{"name", "c"}, {"parent", "a"}, {"quota", {{"gpu", 8}}}, {"guarantee", {{"gpu", 8}}}});
  EXPECT_TRUE(absl::StrContains(st.message(), "queue c: gpu guarantee 8 is above its parent a's guarantee 0"))
      << st;
  EXPECT_TRUE(same());
  // A borrowing limit on a queue without a cohort.
  st = add({{"name", "d"}, {"quota", {{"gpu", 2}}}, {"borrowing_limit", {{"gpu", 1}}}});
  EXPECT_TRUE(absl::StrContains(st.message(), "queue d: gpu borrowing limit needs a cohort")) << st;
  EXPECT_TRUE(same());
  // Jobs go only to queues without children; queues with jobs get no children; parents stay.
  st = Submit(s, Job("j1", "a"));
  EXPECT_TRUE(absl::StrContains(st.message(), "queue a has child queues (b)")) << st;
  ASSERT_TRUE(Submit(s, Job("j2", "b")).ok());
  st = add(Q("e", "b", 1));
  EXPECT_TRUE(absl::StrContains(st.message(), "queue b has job j2, so it cannot have child queues")) << st;
  st = s.DeleteQueue("a");
  EXPECT_TRUE(absl::StrContains(st.message(), "queue a still has child queue b")) << st;
  EXPECT_TRUE(same());
  EXPECT_FALSE(absl::StrContains(st.message(), "\n"));
}

TEST(QueueTreeEngineTest, KaiReclaimBringsADepartmentBackToItsQuota) {
  // Two departments of 4 GPUs each on 8; d2's team borrowed all 8.
  Json scenario = {{"nodes", {GpuNode("n1", 4), GpuNode("n2", 4)}},
                   {"queues", {Q("d1", "", 4), Q("d2", "", 4), Q("a1", "d1", 4), Q("b1", "d2", 4)}},
                   {"jobs", Json::array()}};
  auto s = Make(scenario, TreeConfig("kai"));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("b-", i), "b1")).ok());
  ASSERT_TRUE(s->RunCycle().ok());
  EXPECT_EQ(RunningPerQueue(*s)["b1"], 8);
  ASSERT_TRUE(Submit(*s, Job("a-gang", "a1", 2)).ok());
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(RunningPerQueue(*s)["a1"], 2);
  EXPECT_EQ(r->evictions.size(), 2u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("a-", i), "a1")).ok());
  r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  r = s->RunCycle();  // evicted tasks wait one cycle before they return
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(RunningPerQueue(*s)["a1"], 4);  // its quota
  EXPECT_EQ(RunningPerQueue(*s)["b1"], 4);  // never below its own
  ASSERT_TRUE(r->pending.count("a-2")) << "a1 is at its fair share of 4";
  const CycleResult last = *r;
  for (const QueueShare& q : last.queues)
    if (q.queue == "a1" || q.queue == "b1") EXPECT_DOUBLE_EQ(q.deserved[2], 4) << q.queue;
  // Only leaves hold jobs: a department's own allocation is 0, its subtree's its team's 4 GPUs.
  for (const QueueShare& q : last.queues) {
    if (q.queue != "d1" && q.queue != "d2") continue;
    EXPECT_DOUBLE_EQ(q.allocated[2], 0) << q.queue;
    EXPECT_DOUBLE_EQ(q.subtree_allocated[2], 4) << q.queue;
    EXPECT_DOUBLE_EQ(q.share, 1) << q.queue;
  }
}

TEST(QueueTreeEngineTest, ALendingQueueReclaimsItsNominalQuotaForAWholeNodeGang) {
  // Kueue 6577 / Volcano 4808: team-a lent its quota; its 4-GPU task needs a whole node back.
  Json scenario = {{"nodes", {GpuNode("n1", 4), GpuNode("n2", 4)}},
                   {"queues", {Q("org", "", 0), Q("team-a", "org", 4), Q("team-b", "org", 4)}},
                   {"jobs", Json::array()}};
  for (const char* policy : {"drs", "kai", "capacity"}) {
    auto s = Make(scenario, TreeConfig(policy));
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("b-", i), "team-b")).ok());
    ASSERT_TRUE(s->RunCycle().ok());
    ASSERT_EQ(RunningPerQueue(*s)["team-b"], 8) << policy;
    ASSERT_TRUE(Submit(*s, Job("a-big", "team-a", 1, 4)).ok());
    auto r = s->RunCycle();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(RunningPerQueue(*s)["team-a"], 4)
        << policy << ": " << (r->pending.count("a-big") ? r->pending.at("a-big") : "");
    EXPECT_EQ(RunningPerQueue(*s)["team-b"], 4) << policy;
  }
}

TEST(QueueTreeEngineTest, CohortQuotaIsHonouredAndNoFutilePreemption) {
  // Kueue 9466: a1 and a2 share cohort c1 (4 GPUs of quota, borrowing nothing more); b1 has 4 in
  // c2. Ten GPUs exist. a1 may use all of c1, never more, however many GPUs are idle, and it does
  // not preempt b1 (which would not give c1 more quota).
  Json c1 = {{"name", "c1"}, {"parent", "root"}, {"quota", {{"gpu", 0}}}, {"borrowing_limit", {{"gpu", 0}}}};
  Json scenario = {{"nodes", {GpuNode("n1", 4), GpuNode("n2", 4), GpuNode("n3", 2)}},
                   {"queues", {Q("root", "", 0), c1, Q("c2", "root", 0), Q("a1", "c1", 2),
                               Q("a2", "c1", 2), Q("b1", "c2", 4)}},
                   {"jobs", Json::array()}};
  auto s = Make(scenario, TreeConfig("drs"));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("b-", i), "b1")).ok());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("a-", i), "a1")).ok());
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(RunningPerQueue(*s)["b1"], 4);
  EXPECT_EQ(RunningPerQueue(*s)["a1"], 4);  // all of c1, two GPUs idle
  EXPECT_TRUE(r->evictions.empty());
  ASSERT_TRUE(r->pending.count("a-5"));
  // a2 takes its own quota back from a1.
  ASSERT_TRUE(Submit(*s, Job("a2-0", "a2", 2)).ok());
  r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Evicted(*r).size(), 2u);
  EXPECT_EQ(RunningPerQueue(*s)["a2"], 2);
  for (const EvictDecision& e : r->evictions) EXPECT_TRUE(absl::StartsWith(e.job, "a-")) << e.job;
}

TEST(QueueTreeEngineTest, NoJobIsPreemptedByOneItPreempted) {
  // Within a queue, b (priority 2) preempts a (priority 1). Raising a above b does not let a
  // preempt b back: the ledger refuses the cycle until b leaves.
  Json scenario = {{"nodes", {GpuNode("n1", 1)}}, {"queues", {Q("q", "", 1)}}, {"jobs", Json::array()}};
  auto s = Make(scenario, TreeConfig("kai", "enqueue, allocate, preempt"));
  ASSERT_TRUE(Submit(*s, Job("a", "q", 1, 1, 1)).ok());
  ASSERT_TRUE(s->RunCycle().ok());
  ASSERT_TRUE(Submit(*s, Job("b", "q", 1, 1, 2)).ok());
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(Evicted(*r)["a"], 1);
  auto a = JobFromJson(Job("a", "q", 1, 1, 3));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(s->UpdateJob(*a).ok());
  for (int i = 0; i < 3; ++i) {
    r = s->RunCycle();
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->evictions.empty()) << r->evictions[0].reason;
  }
  ASSERT_TRUE(s->DeleteJob("b").ok());
  r = s->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(RunningPerQueue(*s)["q"], 1);
}

TEST(QueueTreeEngineTest, TimeAwareFairnessGivesTheIdleQueueMore) {
  // Two queues of equal weight and no quota. q1 ran alone for an hour; then both want all 8.
  Json scenario = {{"nodes", {GpuNode("n1", 8)}}, {"queues", {Q("q1", "", 0), Q("q2", "", 0)}},
                   {"jobs", Json::array()}};
  Json config = TreeConfig("kai");
  config["tiers"][1]["plugins"][1]["arguments"] = {
      {"policy", "kai"}, {"k_value", 1.0}, {"usage_half_life", 3600}};
  auto s = Make(scenario, config);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("a-", i), "q1")).ok());
  for (double t = 0; t <= 3600; t += 600) ASSERT_TRUE(s->RunCycleAt(t).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Submit(*s, Job(absl::StrCat("b-", i), "q2")).ok());
  auto r = s->RunCycleAt(3601);
  ASSERT_TRUE(r.ok());
  std::map<std::string, double> gpus;
  for (const QueueShare& q : r->queues) gpus[q.queue] = q.deserved[2];
  const double q1 = gpus["q1"], q2 = gpus["q2"];
  EXPECT_GT(q2, q1);
  EXPECT_DOUBLE_EQ(q1 + q2, 8);
  // Without time-aware fairness they split evenly.
  auto flat = Make(scenario, TreeConfig("kai"));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Submit(*flat, Job(absl::StrCat("a-", i), "q1")).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Submit(*flat, Job(absl::StrCat("b-", i), "q2")).ok());
  r = flat->RunCycleAt(0);
  ASSERT_TRUE(r.ok());
  for (const QueueShare& q : r->queues)
    if (q.queue != "default") EXPECT_DOUBLE_EQ(q.deserved[2], 4) << q.queue;
}

}  // namespace
}  // namespace gpufleet::engine

namespace gpufleet::engine {
namespace {

TEST(QueueTreeEngineTest, MigInstancesAreResourcesOfTheTree) {
  // 14 MIG 1g.10gb instances. Queue a may hold at most 4 of them; b deserves 10. a asks for 6,
  // b for 10: a runs 4 (its limit), b runs 10.
  Json mig = Json::array();
  for (int s = 0; s < 7; ++s) mig.push_back({{"profile", "1g.10gb"}, {"start", s}});
  Json node = {{"name", "n1"}, {"cpu", "64"}, {"memory", "512Gi"},
               {"gpus", {{"count", 2}, {"model", "H100-80GB"}, {"mig", mig}}}};
  Json scenario = {
      {"nodes", {node}},
      {"queues",
       {{{"name", "a"}, {"quota", {{"nvidia.com/mig-1g.10gb", 4}}}, {"limit", {{"mig-1g.10gb", 4}}}},
        {{"name", "b"}, {"quota", {{"mig-1g.10gb", 10}}}}}},
      {"jobs", Json::array()}};
  auto s = Make(scenario, TreeConfig("kai"));
  auto instance_job = [](const std::string& name, const std::string& queue) {
    return Json{{"name", name}, {"queue", queue}, {"replicas", 1},
                {"requests", {{"cpu", "1"}, {"nvidia.com/mig-1g.10gb", 1}}}};
  };
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Submit(*s, instance_job(absl::StrCat("a-", i), "a")).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Submit(*s, instance_job(absl::StrCat("b-", i), "b")).ok());
  auto r = s->RunCycle();
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<std::string, int> running;
  for (const JobState& j : s->Jobs()) running[j.queue] += j.running;
  EXPECT_EQ(running["a"], 4);
  EXPECT_EQ(running["b"], 10);
  EXPECT_TRUE(r->pending.count("a-4") && r->pending.count("a-5"));
  // Free instances appear as b's jobs end; a stays at its limit.
  ASSERT_TRUE(s->DeleteJob("b-0").ok());
  ASSERT_TRUE(s->RunCycle().ok());
  running.clear();
  for (const JobState& j : s->Jobs()) running[j.queue] += j.running;
  EXPECT_EQ(running["a"], 4);
}

}  // namespace
}  // namespace gpufleet::engine
