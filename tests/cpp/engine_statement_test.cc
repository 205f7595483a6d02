// Statement atomicity and the session's composition rules for plugin callbacks.
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/session.h"
#include "gpufleet/engine/statement.h"
#include "gpufleet/io/spec_json.h"

namespace gpufleet::engine {
namespace {

struct Fixture {
  Scheduler scheduler;
  std::vector<const Job*> jobs;
  std::vector<const Queue*> queues;
  std::vector<Queue> queue_store;
  SessionInput Input(std::vector<std::vector<std::string>> tiers = {{"predicates"}}) {
    SessionInput in;
    in.state = &scheduler.cluster();
    queue_store = scheduler.Queues();
    for (const Queue& q : queue_store) in.queues.push_back(&q);
    for (const JobState& j : scheduler.Jobs()) in.jobs.push_back(scheduler.FindJob(j.name));
    in.tiers = std::move(tiers);
    return in;
  }
};

void Load(Fixture& f) {
  Json scenario = Json::parse(R"({
    "nodes": [{"name": "n1", "cpu": "8", "memory": "64Gi", "gpus": {"count": 2, "model": "A100", "memory": "80Gi"}}],
    "jobs": [{"name": "run", "replicas": 1, "requests": {"nvidia.com/gpu": 1}, "running": ["n1"]},
             {"name": "wait", "replicas": 2, "requests": {"nvidia.com/gpu": 1}}]})");
  ASSERT_TRUE(LoadScenario(scenario, &f.scheduler).ok());
}

TEST(EngineStatementTest, DiscardRestoresEverything) {
  Fixture f;
  Load(f);
  Session s(f.Input());
  auto pred = MakePlugin("predicates", Json::object());
  ASSERT_TRUE(pred.ok());
  (*pred)->OnSessionOpen(s);
  const ClusterState before = s.state();
  const Resources job_before = s.job(1).allocated;
  {
    Statement st(s);
    ASSERT_TRUE(st.Evict(0, "test").ok());  // task 0 = run-0
    Placement plan = s.BestNode(s.task(1));
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(st.Allocate(1, plan.allocation).ok());
    plan = s.BestNode(s.task(2));
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(st.Allocate(2, plan.allocation).ok());
    EXPECT_EQ(s.job(1).occupied, 2);
    // A third GPU task would not fit: Allocate refuses and changes nothing.
    EXPECT_FALSE(st.Allocate(2, plan.allocation).ok());
    st.Discard();
  }
  EXPECT_TRUE(s.state() == before);
  EXPECT_EQ(s.task(0).status, TaskStatus::kRunning);
  EXPECT_EQ(s.task(1).status, TaskStatus::kPending);
  EXPECT_EQ(s.job(1).occupied, 0);
  EXPECT_TRUE(s.job(1).allocated.LessEqual(job_before));
  EXPECT_TRUE(s.state().CheckInvariants().ok());
  CycleResult r = s.Close();
  EXPECT_TRUE(r.binds.empty());
  EXPECT_TRUE(r.evictions.empty());
}

TEST(EngineStatementTest, RollbackToMarkAndCommit) {
  Fixture f;
  Load(f);
  Session s(f.Input());
  auto pred = MakePlugin("predicates", Json::object());
  (*pred)->OnSessionOpen(s);
  Statement st(s);
  const Placement plan = s.BestNode(s.task(1));
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(st.Allocate(1, plan.allocation).ok());
  size_t mark = st.Mark();
  ASSERT_TRUE(st.Evict(0, "test").ok());
  st.RollbackTo(mark);
  EXPECT_EQ(s.task(0).status, TaskStatus::kRunning);
  EXPECT_EQ(s.task(1).status, TaskStatus::kAllocated);
  st.Commit();
  CycleResult r = s.Close();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].task, "wait-0");
  EXPECT_TRUE(r.evictions.empty());
  EXPECT_EQ(s.state().FindAllocation("wait-0")->state, AllocationState::kBound);
}

TEST(EngineStatementTest, UnclosedStatementDiscardsItself) {
  Fixture f;
  Load(f);
  Session s(f.Input());
  auto pred = MakePlugin("predicates", Json::object());
  (*pred)->OnSessionOpen(s);
  const ClusterState before = s.state();
  {
    Statement st(s);
    const Placement plan = s.BestNode(s.task(1));
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(st.Allocate(1, plan.allocation).ok());
  }
  EXPECT_TRUE(s.state() == before);
}

TEST(EngineStatementTest, MissCacheIsDroppedWhenResourcesFree) {
  Fixture f;
  Load(f);
  Session s(f.Input());
  auto pred = MakePlugin("predicates", Json::object());
  (*pred)->OnSessionOpen(s);
  Statement st(s);
  const Placement plan = s.BestNode(s.task(1));
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(st.Allocate(1, plan.allocation).ok());
  const Placement miss = s.BestNode(s.task(2));  // both GPUs taken: cached miss
  EXPECT_FALSE(miss.ok());
  EXPECT_TRUE(absl::StrContains(miss.reason, "nodes are available")) << miss.reason;
  ASSERT_TRUE(st.Evict(0, "free one").ok());  // frees a GPU: the cache must not lie
  EXPECT_TRUE(s.BestNode(s.task(2)).ok());
  st.Discard();
}

TEST(EngineStatementTest, TiersFirstNonZeroDecidesAndVictimsIntersect) {
  Fixture f;
  Load(f);
  Session s(f.Input({{"p1", "p2"}, {"p3"}}));
  s.AddJobOrderFn("p3", [](int a, int b) { return a < b ? -1 : 1; });  // later tier
  s.AddJobOrderFn("p1", [](int, int) { return 0; });                     // abstains
  s.AddJobOrderFn("p2", [](int a, int b) { return a > b ? -1 : 1; });  // decides
  EXPECT_TRUE(s.JobLess(1, 0));
  s.AddPreemptableFn("p1", [](const TaskInfo&, const std::vector<int>& c) { return c; });
  s.AddPreemptableFn("p2", [](const TaskInfo&, const std::vector<int>&) { return std::vector<int>{0}; });
  EXPECT_EQ(s.Preemptable(s.task(1), {0, 2}), (std::vector<int>{0}));
  // A later tier still vetoes: victims must satisfy every plugin.
  s.AddPreemptableFn("p3", [](const TaskInfo&, const std::vector<int>&) { return std::vector<int>{2}; });
  EXPECT_TRUE(s.Preemptable(s.task(1), {0, 2}).empty());
  EXPECT_TRUE(s.Reclaimable(s.task(1), {0, 2}).empty());  // nobody answers: no victims
  s.AddNodeScoreFn("p1", [](const TaskInfo&, int) { return 2.0; });
  s.AddNodeScoreFn("p3", [](const TaskInfo&, int) { return 3.0; });
  EXPECT_DOUBLE_EQ(s.NodeScore(s.task(1), 0), 5.0);
}

}  // namespace
}  // namespace gpufleet::engine
