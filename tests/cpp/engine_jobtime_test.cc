// The jobtime action: a JobTimePolicy runs unchanged in the engine. The key check drives the
// engine through the simulator's own scheduling points and asserts that every job starts at the
// same time and is preempted (and migrated) as often as in the simulator.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/sim/simulator.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet::engine {
namespace {

Json JobtimeConfig(const std::string& policy, Json extra_args = Json::object()) {
  Json args = {{"policy", policy}};
  for (auto it = extra_args.begin(); it != extra_args.end(); ++it) args[it.key()] = *it;
  return {{"actions", Json::array({{{"name", "jobtime"}, {"arguments", args}}})},
          {"tiers", Json::array({{{"plugins", Json::array({"predicates", "nodeorder"})}}})}};
}

Json Node2(const std::string& name, const std::string& model, int gpus) {
  return {{"name", name}, {"cpu", "64"}, {"memory", "512Gi"},
          {"gpus", {{"count", gpus}, {"model", model}, {"memory", "16Gi"}}}};
}

// `tasks` tasks of `gpus_each` whole GPUs.
Json GpuJob(const std::string& name, int tasks, int gpus_each, Json extra = Json::object()) {
  Json j = {{"name", name}, {"replicas", tasks},
            {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus_each}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = *it;
  return j;
}

std::unique_ptr<Scheduler> MakeEngine(const Json& config, const std::vector<Json>& nodes) {
  auto s = std::make_unique<Scheduler>();
  absl::Status c = s->Configure(config);
  EXPECT_TRUE(c.ok()) << c;
  for (const Json& n : nodes) {
    absl::Status st = s->cluster().AddNode(NodeFromJson(n).value());
    EXPECT_TRUE(st.ok()) << st;
  }
  return s;
}

void Submit(Scheduler& s, const Json& job) {
  auto j = JobFromJson(job);
  ASSERT_TRUE(j.ok()) << j.status();
  absl::Status st = s.SubmitJob(*j);
  ASSERT_TRUE(st.ok()) << st;
}

// --- The same decisions in the simulator and in the engine -------------------------------------

struct TraceJob {
  double submit;
  int gpus;
  double duration;
  std::vector<double> speed;  // per model (v100, k80); empty: 1.0
};

// What the engine did to each job, read from the cycles' binds and evictions.
struct Observed {
  double first_start = -1;
  int preemptions = 0;
  int migrations = 0;
};

// Both models have 1-GPU tasks on 2-GPU nodes with cpu and memory to spare, so whenever the
// pool's count says a model has n free GPUs, n one-GPU tasks fit on its nodes: node placement can
// never refuse a plan, and the engine must reproduce the simulator exactly. (With multi-GPU
// tasks, a count that fits may be spread over nodes that cannot hold a task; the simulator,
// which counts GPUs per model, cannot see that.)
// `moves`: the simulator's preemptions plus migrations, so a test can check that its trace makes
// the policy preempt at all.
void ExpectSameDecisions(const std::string& policy, const std::vector<TraceJob>& trace,
                         int* moves = nullptr) {
  SCOPED_TRACE(policy);
  auto pool = jobtime::GpuPool::FromJson(Json::array(
      {{{"name", "v100"}, {"count", 4}}, {{"name", "k80"}, {"count", 4}}}));
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::vector<jobtime::JobSpec> specs;
  for (size_t i = 0; i < trace.size(); ++i) {
    jobtime::JobSpec s;
    s.id = static_cast<int64_t>(i);
    s.submit_time = trace[i].submit;
    s.num_gpu = trace[i].gpus;
    s.duration = trace[i].duration;
    s.speed = trace[i].speed;
    specs.push_back(s);
  }
  auto sim_policy = jobtime::MakeJobTimePolicy(policy);
  ASSERT_TRUE(sim_policy.ok()) << sim_policy.status();
  sim::SimOptions options;
  options.record_timeseries = true;
  auto result = sim::Simulate(*pool, specs, **sim_policy, options);
  ASSERT_TRUE(result.ok()) << result.status();

  auto engine = MakeEngine(JobtimeConfig(policy),
                           {Node2("v1", "V100", 2), Node2("v2", "V100", 2), Node2("k1", "K80", 2),
                            Node2("k2", "K80", 2)});
  std::vector<double> times;
  for (const sim::TimeSample& t : result->timeseries) times.push_back(t.time);
  ASSERT_FALSE(times.empty());
  std::map<std::string, Observed> seen;
  std::set<std::string> submitted, deleted;
  auto name = [](size_t i) { return absl::StrCat("j", i); };
  for (double t : times) {
    for (size_t i = 0; i < trace.size(); ++i) {
      const jobtime::Job& done = result->jobs[i];
      if (done.end_time == t && submitted.count(name(i)) && !deleted.count(name(i))) {
        ASSERT_TRUE(engine->DeleteJob(name(i)).ok());
        deleted.insert(name(i));
      }
    }
    for (size_t i = 0; i < trace.size(); ++i) {
      if (trace[i].submit != t) continue;
      Json extra = {{"expected_duration", trace[i].duration}};
      if (!trace[i].speed.empty())
        extra["throughput"] = {{"V100", trace[i].speed[0]}, {"K80", trace[i].speed[1]}};
      Submit(*engine, GpuJob(name(i), trace[i].gpus, 1, extra));
      submitted.insert(name(i));
    }
    auto r = engine->RunCycleAt(t);
    ASSERT_TRUE(r.ok()) << r.status();
    std::set<std::string> bound, preempted, migrated;
    for (const BindDecision& b : r->binds) bound.insert(b.job);
    for (const EvictDecision& e : r->evictions) {
      if (e.reason.find("preempted") != std::string::npos) preempted.insert(e.job);
      if (e.reason.find("migrating") != std::string::npos) migrated.insert(e.job);
    }
    for (const std::string& j : bound)
      if (seen[j].first_start < 0) seen[j].first_start = t;
    for (const std::string& j : preempted) ++seen[j].preemptions;
    for (const std::string& j : migrated) ++seen[j].migrations;
  }
  int total = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    SCOPED_TRACE(name(i));
    const jobtime::Job& expect = result->jobs[i];
    EXPECT_EQ(seen[name(i)].first_start, expect.first_start);
    EXPECT_EQ(seen[name(i)].preemptions, expect.preemptions);
    EXPECT_EQ(seen[name(i)].migrations, expect.migrations);
    total += expect.preemptions + expect.migrations;
  }
  if (moves != nullptr) *moves = total;
}

// Six jobs of 1-4 GPUs arriving while the cluster is busy.
std::vector<TraceJob> Trace() {
  return {{0, 2, 100, {}}, {10, 4, 50, {}}, {20, 1, 30, {}},
          {30, 3, 80, {}}, {35, 2, 40, {}}, {40, 4, 20, {}}};
}

TEST(EngineJobtimeTest, FifoMatchesTheSimulator) { ExpectSameDecisions("fifo", Trace()); }

TEST(EngineJobtimeTest, LasMatchesTheSimulator) {
  // Twice as many GPUs asked as the cluster has, so LAS must preempt.
  std::vector<TraceJob> t = {{0, 4, 300, {}}, {0, 4, 200, {}}, {10, 2, 100, {}},
                             {20, 3, 80, {}},  {50, 4, 60, {}},  {60, 1, 30, {}}};
  int moves = 0;
  ExpectSameDecisions("las", t, &moves);
  EXPECT_GT(moves, 0);
}

TEST(EngineJobtimeTest, DlasGpuMatchesTheSimulator) {
  // Small queue limits so that jobs are demoted (policy wake-ups between arrivals).
  std::vector<TraceJob> t = {{0, 4, 300, {}}, {0, 4, 200, {}}, {10, 2, 100, {}},
                             {20, 3, 80, {}},  {50, 4, 60, {}},  {60, 1, 30, {}}};
  int moves = 0;
  ExpectSameDecisions("dlas-gpu(queue_limits=[100,400])", t, &moves);
  EXPECT_GT(moves, 0);
}

TEST(EngineJobtimeTest, HeteroLasWithThroughputsMatchesTheSimulator) {
  std::vector<TraceJob> t = {{0, 2, 200, {1.0, 0.5}}, {0, 3, 150, {1.0, 0.2}},
                             {10, 2, 100, {1.0, 0.9}}, {20, 4, 80, {1.0, 0.3}},
                             {30, 1, 60, {1.0, 0.6}},  {40, 2, 50, {1.0, 0.25}}};
  int moves = 0;
  ExpectSameDecisions("hetero-las", t, &moves);
  EXPECT_GT(moves, 0);
}

TEST(EngineJobtimeTest, OtherPoliciesMatchTheSimulator) {
  std::vector<TraceJob> t = {{0, 4, 300, {1.0, 0.5}}, {0, 4, 200, {1.0, 0.4}},
                             {10, 2, 100, {1.0, 0.9}}, {20, 3, 80, {1.0, 0.3}},
                             {50, 4, 60, {1.0, 0.7}},  {60, 1, 30, {1.0, 0.5}}};
  for (const char* p : {"fifo(backfill=true)", "sjf", "srtf", "las(service=time)",
                        "hetero-las(aware=false)", "gavel-maxmin(round_duration=50)"})
    ExpectSameDecisions(p, t);
}

// --- LAS in the engine ---------------------------------------------------------------------------

TEST(EngineJobtimeTest, LasPreemptsTheJobWithMostServiceOnAFullCluster) {
  auto s = MakeEngine(JobtimeConfig("las"), {Node2("n1", "A100", 2), Node2("n2", "A100", 2)});
  Submit(*s, GpuJob("a", 2, 1));
  ASSERT_TRUE(s->RunCycleAt(0).ok());
  Submit(*s, GpuJob("b", 2, 1));
  ASSERT_TRUE(s->RunCycleAt(50).ok());  // full: a has 100 GPU-seconds, b none
  Submit(*s, GpuJob("c", 2, 1));
  auto r = s->RunCycleAt(100);  // a 200, b 100, c 0: a gives way
  ASSERT_TRUE(r.ok()) << r.status();
  std::set<std::string> evicted, bound;
  for (const auto& e : r->evictions) {
    evicted.insert(e.job);
    EXPECT_EQ(e.reason, "jobtime las: preempted");
  }
  for (const auto& b : r->binds) bound.insert(b.job);
  EXPECT_EQ(evicted, std::set<std::string>({"a"}));
  EXPECT_EQ(bound, std::set<std::string>({"c"}));
  // Evicted tasks are releasing until the cycle ends; on the next cycle a waits, with a reason.
  r = s->RunCycleAt(120);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  EXPECT_TRUE(r->evictions.empty());
  ASSERT_TRUE(r->pending.count("a"));
  EXPECT_EQ(r->pending.at("a"), "jobtime las: waiting for 2 GPUs (not in the policy's plan)");
  // b finishes: a (200) resumes.
  ASSERT_TRUE(s->DeleteJob("b").ok());
  r = s->RunCycleAt(150);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->binds.size(), 2u);
  EXPECT_EQ(r->binds[0].job, "a");
  EXPECT_TRUE(r->evictions.empty());
}

TEST(EngineJobtimeTest, TimeMustNotGoBackwards) {
  auto s = MakeEngine(JobtimeConfig("las"), {Node2("n1", "A100", 2)});
  ASSERT_TRUE(s->RunCycleAt(10).ok());
  auto r = s->RunCycleAt(5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("before the last cycle"), std::string::npos);
  // The default clock is monotonic from the scheduler's creation.
  Scheduler fresh;
  EXPECT_GE(fresh.now(), 0);
  fresh.set_clock([] { return 42.0; });
  EXPECT_EQ(fresh.now(), 42.0);
}

TEST(EngineJobtimeTest, JobsArriveOnceAModelCanHoldThemAndAgainWhenUpdated) {
  auto s = MakeEngine(JobtimeConfig("fifo"), {Node2("n1", "A100", 2)});
  Submit(*s, GpuJob("big", 4, 1));
  auto r = s->RunCycleAt(0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pending.at("big"),
            "jobtime fifo: needs 4 whole GPUs of one model it can run on; no model has that many "
            "(A100)");
  Submit(*s, GpuJob("nowhere", 1, 1, {{"throughput", {{"H100", 1.0}}}}));
  // Updated to two tasks while pending: it arrives (and starts) as the job it now is.
  auto two = JobFromJson(GpuJob("big", 2, 1)).value();
  ASSERT_TRUE(s->UpdateJob(two).ok());
  r = s->RunCycleAt(1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->binds.size(), 2u);
  EXPECT_EQ(r->pending.at("nowhere"),
            "jobtime fifo: its throughput and gpu_models name none of the cluster's GPU models");
  ASSERT_TRUE(s->DeleteJob("nowhere").ok());
  // A queued job updated to fewer GPUs keeps waiting, then starts with its new shape.
  Submit(*s, GpuJob("next", 2, 1));
  ASSERT_TRUE(s->RunCycleAt(2).ok());
  ASSERT_TRUE(s->UpdateJob(JobFromJson(GpuJob("next", 1, 1)).value()).ok());
  r = s->RunCycleAt(3);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->binds.empty());
  ASSERT_TRUE(s->DeleteJob("big").ok());
  r = s->RunCycleAt(4);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->binds.size(), 1u);
  EXPECT_EQ(r->binds[0].job, "next");
}

// --- Configuration errors ------------------------------------------------------------------------

TEST(EngineJobtimeTest, BadArgumentsAreClearErrors) {
  Scheduler s;
  auto expect_error = [&](const Json& config, const std::vector<std::string>& parts) {
    absl::Status st = s.Configure(config);
    ASSERT_FALSE(st.ok()) << config.dump();
    for (const std::string& p : parts)
      EXPECT_NE(st.message().find(p), std::string::npos) << st.message() << " lacks " << p;
  };
  expect_error(JobtimeConfig("nope"), {"actions[0]", "jobtime", "unknown policy \"nope\""});
  expect_error(JobtimeConfig("las(service=banana)"), {"jobtime", "las: \"service\" must be one of \"gpu_time\", \"time\", got \"banana\""});
  expect_error(JobtimeConfig("las", {{"bogus", 1}}), {"jobtime", "bogus"});
  expect_error(JobtimeConfig("las", {{"perf_factors", {{"A100", -1}}}}),
               {"jobtime: perf_factors.A100 must be a number > 0"});
  expect_error(JobtimeConfig("las", {{"perf_factors", 3}}), {"jobtime: perf_factors must be"});
  expect_error({{"actions", "jobtime(policy=las)"}, {"tiers", {{{"plugins", {"gang"}}}}}},
               {"\"predicates\""});
  // The string form works too, and the defaults (fifo) need no arguments.
  EXPECT_TRUE(s.Configure({{"actions", "jobtime(policy=las)"},
                           {"tiers", {{{"plugins", {"predicates"}}}}}})
                  .ok());
  EXPECT_TRUE(s.Configure({{"actions", "jobtime"}, {"tiers", {{{"plugins", {"predicates"}}}}}})
                  .ok());
}

TEST(EngineJobtimeTest, JobTimeFieldsAreValidated) {
  auto ok = JobFromJson(GpuJob("a", 1, 1, {{"throughput", {{"V100", 1.0}, {"K80", 0.3}}},
                                           {"expected_duration", 3600}}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->throughput.at("K80"), 0.3);
  EXPECT_EQ(ok->expected_duration, 3600);
  EXPECT_EQ(ok->tasks.size(), 1u);
  auto bad_speed = JobFromJson(GpuJob("a", 1, 1, {{"throughput", {{"V100", -1}}}}));
  ASSERT_FALSE(bad_speed.ok());
  EXPECT_NE(bad_speed.status().message().find("job a: throughput.V100"), std::string::npos)
      << bad_speed.status();
  auto bad_map = JobFromJson(GpuJob("a", 1, 1, {{"throughput", 2}}));
  ASSERT_FALSE(bad_map.ok());
  EXPECT_NE(bad_map.status().message().find("job a: throughput"), std::string::npos);
  auto bad_duration = JobFromJson(GpuJob("b", 1, 1, {{"expected_duration", 0}}));
  ASSERT_FALSE(bad_duration.ok());
  EXPECT_NE(bad_duration.status().message().find("job b: expected_duration"), std::string::npos);
  Json with_tasks = {{"name", "c"},
                     {"expected_duration", "soon"},
                     {"tasks", {{{"name", "c-0"}, {"requests", {{"nvidia.com/gpu", 1}}}}}}};
  auto bad_tasks = JobFromJson(with_tasks);
  ASSERT_FALSE(bad_tasks.ok());
  EXPECT_NE(bad_tasks.status().message().find("job c: expected_duration"), std::string::npos);
}

// --- Gang: all or nothing ------------------------------------------------------------------------

TEST(EngineJobtimeTest, GangThatCannotBePlacedOnItsModelLeavesNothingAllocated) {
  // Four free A100s by count (2 on n1, 1 on n2, 1 on n3), but a task needs 2 on one node: the
  // first task fits n1, the second fits nowhere, so neither stays.
  auto s = MakeEngine(JobtimeConfig("fifo"),
                      {Node2("n1", "A100", 2), Node2("n2", "A100", 2), Node2("n3", "A100", 2)});
  auto binpack = MakeStrategy("binpack").value();
  for (const char* node : {"n2", "n3"}) {
    Pod other = PodFromJson({{"name", absl::StrCat("other-", node)},
                             {"requests", {{"nvidia.com/gpu", 1}}}})
                    .value();
    std::vector<int> where = {s->cluster().FindNode(node)};
    ASSERT_TRUE(test::PlaceWith(Placer(), s->cluster(), other, *binpack, true, &where).ok());
  }
  Submit(*s, GpuJob("gang", 2, 2));
  auto r = s->RunCycleAt(0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->binds.empty());
  EXPECT_EQ(s->cluster().num_allocations(), 2);  // only the two pods outside any job
  ASSERT_TRUE(r->pending.count("gang"));
  EXPECT_NE(r->pending.at("gang").find("jobtime fifo: planned on A100, but task gang-1"),
            std::string::npos)
      << r->pending.at("gang");
  // Once n2's pod leaves, both tasks start together.
  ASSERT_TRUE(s->cluster().Release("other-n2").ok());
  r = s->RunCycleAt(10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->binds.size(), 2u);
}

TEST(EngineJobtimeTest, TasksGoOnlyToTheAssignedModel) {
  // hetero-las puts the job on the model where it runs fastest (K80 here), not the first one.
  auto s = MakeEngine(JobtimeConfig("hetero-las"),
                      {Node2("v1", "V100", 2), Node2("k1", "K80", 2), Node2("k2", "K80", 2)});
  Submit(*s, GpuJob("fast-on-k80", 2, 1, {{"throughput", {{"V100", 0.5}, {"K80", 1.0}}}}));
  Submit(*s, GpuJob("anywhere", 2, 1));
  auto r = s->RunCycleAt(0);
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<std::string, std::set<std::string>> nodes;
  for (const auto& b : r->binds) nodes[b.job].insert(b.allocation.node);
  EXPECT_EQ(nodes["fast-on-k80"].count("v1"), 0u);
  EXPECT_EQ(nodes["fast-on-k80"].size() + nodes["anywhere"].size() > 0, true);
  for (const std::string& n : nodes["fast-on-k80"]) EXPECT_EQ(n[0], 'k');
}

TEST(EngineJobtimeTest, SharedAndCpuJobsAreLeftToOtherActions) {
  Json shared = {{"name", "shared"}, {"replicas", 1},
                 {"requests", {{"cpu", "1"}, {"koordinator.sh/gpu-core", 50},
                               {"koordinator.sh/gpu-memory-ratio", 50}}}};
  Json config = {{"actions", "jobtime(policy=las), allocate"},
                 {"tiers", {{{"plugins", {"predicates", "deviceshare"}}}}}};
  auto s = MakeEngine(config, {Node2("n1", "A100", 2)});
  Submit(*s, shared);
  Submit(*s, {{"name", "cpu"}, {"replicas", 1}, {"requests", {{"cpu", "1"}}}});
  Submit(*s, GpuJob("whole", 1, 1));
  auto r = s->RunCycleAt(0);
  ASSERT_TRUE(r.ok()) << r.status();
  std::set<std::string> bound;
  for (const auto& b : r->binds) bound.insert(b.job);
  EXPECT_EQ(bound, std::set<std::string>({"shared", "cpu", "whole"}));

  // A GPU that something else holds is not in the pool: fifo does not even plan the second job
  // (had it counted the GPU, the reason would say the placement failed).
  auto alone = MakeEngine(JobtimeConfig("fifo"), {Node2("n1", "A100", 2)});
  Pod other = PodFromJson({{"name", "other"},
                           {"requests", {{"koordinator.sh/gpu-core", 50},
                                         {"koordinator.sh/gpu-memory-ratio", 50}}}})
                  .value();
  auto binpack = MakeStrategy("binpack").value();
  ASSERT_TRUE(test::PlaceWith(Placer(), alone->cluster(), other, *binpack).ok());
  Submit(*alone, GpuJob("first", 1, 1));
  Submit(*alone, GpuJob("second", 1, 1));
  r = alone->RunCycleAt(0);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->binds.size(), 1u);
  EXPECT_EQ(r->binds[0].job, "first");
  ASSERT_TRUE(r->pending.count("second"));
  EXPECT_EQ(r->pending.at("second"),
            "jobtime fifo: waiting for 1 GPUs (not in the policy's plan)");
}

}  // namespace
}  // namespace gpufleet::engine
