// The openb GPU-sharing policies and replay (Weng et al., USENIX ATC 2023): each strategy's choice
// on small hand-made nodes, the fragmentation measure on a worked example, and the replay's
// determinism, invariants and input errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/placement/strategies/fgd.h"
#include "gpufleet/placement/strategies/fragmentation.h"
#include "gpufleet/placement/observer.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/policies/gpu_pool.h"
#include "gpufleet/sim/openb_replay.h"
#include "gpufleet/placement/placer.h"
#include "gtest/gtest.h"

namespace gpufleet {
namespace {

ClusterState MakeCluster(const std::vector<OpenbNode>& rows) {
  ClusterState c;
  for (const OpenbNode& r : rows) {
    auto n = OpenbNodeToNode(r);
    EXPECT_TRUE(n.ok()) << n.status();
    EXPECT_TRUE(c.AddNode(*n).ok());
  }
  return c;
}

Pod MakePod(const std::string& name, int64_t cpu, int num_gpu, int milli) {
  auto p = OpenbPodToPod({name, cpu, 1024, num_gpu, milli, {}});
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// Puts `core` percent of GPU `minor` of `node` under a pod, bypassing any strategy.
void Occupy(ClusterState& c, const std::string& pod, const std::string& node, int minor,
            int64_t core, int64_t cpu = 1000) {
  Allocation a;
  a.pod = pod;
  a.node = node;
  a.cpu_milli = cpu;
  a.devices.push_back({"gpu", minor, core, 0});
  ASSERT_TRUE(c.Reserve(a).ok());
  ASSERT_TRUE(c.Commit(pod).ok());
}

std::unique_ptr<PlacementStrategy> Strategy(const std::string& spec) {
  auto s = MakeStrategy(spec);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

std::vector<int> Minors(const Allocation& a) {
  std::vector<int> out;
  for (const auto& g : a.devices) out.push_back(g.minor);
  return out;
}

TEST(ReplayStrategies, AllRegistered) {
  for (const char* name : {"random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd"})
    EXPECT_TRUE(Registry<PlacementStrategy>::Global().Contains(name)) << name;
  EXPECT_TRUE(Registry<PlacementStrategy>::Global().DuplicateNames().empty());
}

TEST(ReplayStrategies, BestFitTakesTheNodeAndGpuLeftFullest) {
  ClusterState c = MakeCluster({{"a", 32000, 65536, 2, "T4"}, {"b", 96000, 65536, 8, "G2"}});
  Occupy(c, "old", "a", 1, 60);
  auto s = Strategy("bestfit");
  Placement r = Placer().Place(c, {.pod = MakePod("p", 4000, 1, 300), .strategy = *s});
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.allocation.node, "a");
  EXPECT_EQ(Minors(r.allocation), std::vector<int>{1});  // 40 free beats an idle GPU
}

TEST(ReplayStrategies, DotProdTakesTheSmallestAlignment) {
  ClusterState c = MakeCluster({{"big", 96000, 65536, 8, "G2"}, {"small", 16000, 65536, 1, "P100"}});
  auto s = Strategy("dotprod");
  // Free (cpu, gpu) x request is smaller on the small node: the pod packs there.
  EXPECT_GT(ScoreOnNode(c, MakePod("p", 4000, 1, 1000), 1, *s), ScoreOnNode(c, MakePod("p", 4000, 1, 1000), 0, *s));
  Placement r = Placer().Place(c, {.pod = MakePod("p", 4000, 1, 1000), .strategy = *s});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.allocation.node, "small");
}

TEST(ReplayStrategies, GpuPackingPrefersUsedGpusThenUsedNodes) {
  ClusterState c = MakeCluster({{"idle", 64000, 65536, 2, "T4"}, {"used", 64000, 65536, 2, "T4"}});
  Occupy(c, "old", "used", 1, 50);
  auto s = Strategy("gpu-packing");
  Placement shared = Placer().Place(c, {.pod = MakePod("shared", 1000, 1, 300), .strategy = *s});
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared.allocation.node, "used");
  EXPECT_EQ(Minors(shared.allocation), std::vector<int>{1});
  // A whole GPU: the used node's idle GPU (tier 2, score 49) beats the idle node (tier 3, 31).
  EXPECT_EQ(ScoreOnNode(c, MakePod("whole", 1000, 1, 1000), c.FindNode("used"), *s), 49.0);
  EXPECT_EQ(ScoreOnNode(c, MakePod("whole", 1000, 1, 1000), c.FindNode("idle"), *s), 31.0);
  // CPU-only pods score 0 everywhere.
  EXPECT_EQ(ScoreOnNode(c, MakePod("cpu", 1000, 0, 0), 0, *s), 0.0);
}

TEST(ReplayStrategies, GpuClusteringGroupsRequestKinds) {
  ClusterState c = MakeCluster({{"a", 64000, 65536, 4, "G2"}, {"b", 64000, 65536, 4, "G2"},
                                {"c", 64000, 65536, 4, "G2"}});
  auto s = Strategy("gpu-clustering");
  auto* observer = dynamic_cast<PlacementObserver*>(s.get());
  ASSERT_NE(observer, nullptr);
  Pod shared = MakePod("s0", 1000, 1, 500), whole = MakePod("w0", 1000, 1, 1000);
  Occupy(c, "s0", "a", 0, 50);
  observer->OnBound(c.node(0), shared);
  Occupy(c, "w0", "b", 0, 100);
  observer->OnBound(c.node(1), whole);
  Placement r1 = Placer().Place(c, {.pod = MakePod("s1", 1000, 1, 200), .strategy = *s});
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1.allocation.node, "a");
  Placement r2 = Placer().Place(c, {.pod = MakePod("w1", 1000, 1, 1000), .strategy = *s});
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2.allocation.node, "b");
  // A 2-GPU pod is a kind no node holds yet: the idle node (tier 3) wins.
  Placement r3 = Placer().Place(c, {.pod = MakePod("m", 1000, 2, 1000), .strategy = *s});
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3.allocation.node, "c");
}

TEST(ReplayStrategies, GpuClusteringEstimatesKindsWithoutNotifications) {
  // Behind an adapter that reports nothing, a partly used GPU marks a node as holding shares.
  ClusterState c = MakeCluster({{"a", 64000, 65536, 4, "G2"}, {"b", 64000, 65536, 4, "G2"}});
  Occupy(c, "old", "b", 2, 30);
  auto s = Strategy("gpu-clustering");
  Placement r = Placer().Place(c, {.pod = MakePod("s", 1000, 1, 200), .strategy = *s});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.allocation.node, "b");
  EXPECT_FALSE(MakeStrategy("gpu-clustering(max_gpus=0)").ok());
}

TEST(ReplayStrategies, RandomIsSeededAndFeasible) {
  std::vector<OpenbNode> rows;
  for (int i = 0; i < 20; ++i) rows.push_back({"n" + std::to_string(i), 8000, 65536, 1, "T4"});
  rows.push_back({"tiny", 500, 65536, 1, "T4"});  // too little CPU for every pod below
  auto run = [&](const std::string& spec) {
    ClusterState c = MakeCluster(rows);
    auto s = Strategy(spec);
    std::vector<std::string> nodes;
    for (int i = 0; i < 10; ++i) {
      const Pod pod = MakePod("p" + std::to_string(i), 1000, 1, 200);
      Placement r = Placer().Place(c, {.pod = pod, .strategy = *s});
      EXPECT_TRUE(r.ok());
      EXPECT_NE(r.allocation.node, "tiny");
      nodes.push_back(r.allocation.node);
    }
    return nodes;
  };
  EXPECT_EQ(run("random(seed=7)"), run("random(seed=7)"));
  EXPECT_NE(run("random(seed=7)"), run("random(seed=8)"));
}

// Worked example: tasks {50% of one GPU, cpu 0} and {one whole GPU, cpu 8000}, equal weights;
// a node with GPUs free 100% and 30%. For the 50% task the 30% GPU is a fragment (30); for the
// whole-GPU task too (30): fragmentation 0.5 * 30 + 0.5 * 30 = 30. With only 4000 CPU left the
// whole-GPU task cannot run, so all 130 free are fragments for it: 0.5 * 30 + 0.5 * 130 = 80.
TEST(Fragmentation, WorkedExample) {
  auto w = GpuWorkload::FromJson(Json::parse("[[0, 50, 1, 1], [8000, 100, 1, 1]]"));
  ASSERT_TRUE(w.ok()) << w.status();
  ClusterState c = MakeCluster({{"n", 64000, 65536, 2, "T4"}});
  Occupy(c, "old", "n", 1, 70, 0);
  NodeView v = c.View(0);
  GpuSlots s = SlotsOf(v);
  ASSERT_EQ(s.n, 2);
  EXPECT_DOUBLE_EQ(w->Fragmentation(v, s, 64000), 30.0);
  EXPECT_DOUBLE_EQ(w->Fragmentation(v, s, 4000), 80.0);
  // A CPU-only task can use no GPU: all free share is a fragment for it.
  auto cpu_only = GpuWorkload::FromJson(Json::parse("[[1000, 0, 0, 1]]"));
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_DOUBLE_EQ(cpu_only->Fragmentation(v, s, 64000), 130.0);
  // Typical pods: the most frequent shapes covering the requested share, renormalised.
  std::vector<ShareTask> tasks(6);
  for (int i = 0; i < 6; ++i) tasks[i] = {1000, i < 4 ? 50 : 100, 1, {}};
  GpuWorkload typical = GpuWorkload::FromTasks(tasks, 0.6);
  ASSERT_EQ(typical.entries().size(), 1u);
  EXPECT_EQ(typical.entries()[0].task.core, 50);
  EXPECT_DOUBLE_EQ(typical.entries()[0].weight, 1.0);
  EXPECT_EQ(GpuWorkload::FromTasks(tasks, 0.95).entries().size(), 2u);
}

TEST(Fragmentation, RejectsBadWorkloads) {
  EXPECT_FALSE(GpuWorkload::FromJson(Json::parse("[[0, 50, 1, -1]]")).ok());
  EXPECT_FALSE(GpuWorkload::FromJson(Json::parse("[[0, 50, 2, 1]]")).ok());  // shared multi-GPU
  EXPECT_FALSE(GpuWorkload::FromJson(Json::parse("[]")).ok());
  EXPECT_FALSE(GpuWorkload::FromJson(Json::parse("{}")).ok());
  EXPECT_FALSE(MakeStrategy("fgd(workload=[[0, 150, 1, 1]])").ok());
  EXPECT_FALSE(MakeStrategy("fgd(typo=1)").ok());
}

// FGD picks the GPU that keeps fragmentation lowest, not the fullest one: with only 50% tasks
// expected, a 50% pod on the 60%-free GPU strands 10%, on the idle GPU it strands nothing.
TEST(Fgd, ChoosesTheGpuThatLeavesLeastFragmentation) {
  auto w = GpuWorkload::FromJson(Json::parse("[[0, 50, 1, 1]]"));
  ASSERT_TRUE(w.ok());
  for (bool integer : {true, false}) {
    ClusterState c = MakeCluster({{"n", 64000, 65536, 2, "T4"}});
    Occupy(c, "old", "n", 1, 40);
    auto fgd = MakeFgd(*w, integer);
    Placement r = Placer().Place(c, {.pod = MakePod("p", 1000, 1, 500), .strategy = *fgd});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(Minors(r.allocation), std::vector<int>{0});
    ClusterState c2 = MakeCluster({{"n", 64000, 65536, 2, "T4"}});
    Occupy(c2, "old", "n", 1, 40);
    auto bestfit = Strategy("bestfit");
    const Pod again = MakePod("p", 1000, 1, 500);
    EXPECT_EQ(Minors(Placer().Place(c2, {.pod = again, .strategy = *bestfit}).allocation),
              std::vector<int>{1});
  }
}

TEST(Fgd, WithoutAWorkloadAvoidsSplittingIdleGpus) {
  // The registry's default workload is one whole-GPU task: a share goes to a GPU already split.
  ClusterState c = MakeCluster({{"n", 64000, 65536, 4, "T4"}});
  Occupy(c, "old", "n", 2, 40);
  auto fgd = Strategy("fgd");
  Placement r = Placer().Place(c, {.pod = MakePod("p", 1000, 1, 300), .strategy = *fgd});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Minors(r.allocation), std::vector<int>{2});
}

TEST(Fgd, PrefersTheNodeWhereFragmentationGrowsLeast) {
  // Node "half" has a 50%-free GPU that exactly fits the pod; "idle" would be cut to 50%, which
  // the expected whole-GPU tasks cannot use.
  auto w = GpuWorkload::FromJson(Json::parse("[[0, 100, 1, 1]]"));
  ASSERT_TRUE(w.ok());
  ClusterState c = MakeCluster({{"idle", 64000, 65536, 1, "T4"}, {"half", 64000, 65536, 1, "T4"}});
  Occupy(c, "old", "half", 0, 50);
  auto fgd = MakeFgd(*w, false);
  EXPECT_GT(ScoreOnNode(c, MakePod("p", 1000, 1, 500), 1, *fgd), ScoreOnNode(c, MakePod("p", 1000, 1, 500), 0, *fgd));
  Placement r = Placer().Place(c, {.pod = MakePod("p", 1000, 1, 500), .strategy = *fgd});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.allocation.node, "half");
}

// Model limits are part of fgd's memo key: two nodes in the same state but with other GPU models
// get their own answers, equal to those of an instance that never saw the other node.
TEST(Fgd, ModelLimitsKeepTheMemoExact) {
  // The expected tasks only run on T4: on a G2 node, every free share is a fragment for them.
  auto w = GpuWorkload::FromJson(Json::parse(
      R"([{"cpu_milli": 0, "core": 50, "gpu_count": 1, "weight": 1, "models": ["T4"]},
          [0, 100, 1, 1]])"));
  ASSERT_TRUE(w.ok()) << w.status();
  ClusterState c = MakeCluster({{"t4", 64000, 65536, 2, "T4"}, {"g2", 64000, 65536, 2, "G2"}});
  Occupy(c, "a", "t4", 1, 40);
  Occupy(c, "b", "g2", 1, 40);
  for (const OpenbPod& row : {OpenbPod{"p", 1000, 1024, 1, 200, {}},
                              OpenbPod{"q", 1000, 1024, 1, 200, {"G2", "T4"}},
                              OpenbPod{"r", 1000, 1024, 1, 1000, {}}}) {
    Pod pod = *OpenbPodToPod(row);
    auto warm = MakeFgd(*w, false);
    const double t4 = ScoreOnNode(c, pod, 0, *warm);  // fills the memo for this state
    const double g2 = ScoreOnNode(c, pod, 1, *warm);
    auto fresh = MakeFgd(*w, false);
    EXPECT_DOUBLE_EQ(g2, ScoreOnNode(c, pod, 1, *fresh)) << row.name;
    if (row.gpu_milli < 1000) EXPECT_NE(t4, g2) << row.name;  // the models matter here
  }
}

// A task limited to a model can use only the GPUs of that model, even on a node that mixes them.
TEST(Fragmentation, ModelLimitsCountPerGpu) {
  auto w = GpuWorkload::FromJson(
      Json::parse(R"([{"cpu_milli": 0, "core": 100, "gpu_count": 1, "models": ["T4"]}])"));
  ASSERT_TRUE(w.ok()) << w.status();
  Node mixed = *OpenbNodeToNode({"mixed", 64000, 65536, 2, "T4"});
  mixed.devices[1].model = "G2";
  ClusterState c;
  ASSERT_TRUE(c.AddNode(mixed).ok());
  NodeView v = c.View(0);
  EXPECT_DOUBLE_EQ(w->Fragmentation(v, SlotsOf(v), 64000), 100.0);  // the G2 GPU is a fragment
  Occupy(c, "old", "mixed", 0, 70);
  v = c.View(0);
  EXPECT_DOUBLE_EQ(w->Fragmentation(v, SlotsOf(v), 64000), 130.0);  // no whole T4 left
  const GpuSlots s = SlotsOf(v);
  EXPECT_DOUBLE_EQ(w->Fragmentation(s, 64000, w->AcceptedSlots(v, s)), 130.0);
}

std::vector<OpenbNode> SmallNodes() {
  std::vector<OpenbNode> nodes;
  for (int i = 0; i < 12; ++i)
    nodes.push_back({"node-" + std::to_string(100 + i), 32000 + 8000 * (i % 3), 262144,
                     i % 3 == 0 ? 8 : 2, i % 2 ? "T4" : "G2"});
  return nodes;
}

std::vector<OpenbPod> SmallPods() {
  std::vector<OpenbPod> pods;
  const int milli[] = {250, 500, 1000, 810, 1000, 470, 0};
  for (int i = 0; i < 60; ++i) {
    int m = milli[i % 7];
    int gpus = m == 0 ? 0 : (i % 13 == 0 ? 2 : 1);
    if (gpus == 2) m = 1000;
    pods.push_back({"pod-" + std::to_string(i), 2000 + 1000 * (i % 5), 4096, gpus, m, {}});
  }
  return pods;
}

// A strategy that records the parameters it was built with (and places like binpack), to check
// that the replay fills what a strategy declares rather than what a name list says.
Json& RecordedReplayParams() {
  static Json* recorded = new Json();
  return *recorded;
}
GPUFLEET_REGISTER(PlacementStrategy,
                  {.name = "test-replay-params",
                   .description = "test only: binpack that records its parameters",
                   .params = {{"seed", ParamType::kInt, 0, "recorded"},
                              {"workload", ParamType::kAny, nullptr, "recorded"}}},
                  [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
                    RecordedReplayParams() = p.json();
                    return MakeStrategy("binpack");
                  });

TEST(OpenbReplay, DeclaredSeedAndWorkloadParametersAreFilled) {
  OpenbReplayOptions o;
  o.policy = "test-replay-params";
  o.seed = 7;
  ASSERT_TRUE(ReplayOpenb(SmallNodes(), SmallPods(), o).ok());
  EXPECT_EQ(RecordedReplayParams()["seed"], Json(7));
  ASSERT_TRUE(RecordedReplayParams().contains("workload"));
  EXPECT_TRUE(GpuWorkload::FromJson(RecordedReplayParams()["workload"]).ok());
  // What the caller gives wins.
  o.params = {{"seed", 3}};
  ASSERT_TRUE(ReplayOpenb(SmallNodes(), SmallPods(), o).ok());
  EXPECT_EQ(RecordedReplayParams()["seed"], Json(3));
}

TEST(OpenbReplay, DeterministicAndConsistent) {
  for (const char* policy : {"random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd"}) {
    OpenbReplayOptions o;
    o.policy = policy;
    o.seed = 3;
    auto a = ReplayOpenb(SmallNodes(), SmallPods(), o);
    auto b = ReplayOpenb(SmallNodes(), SmallPods(), o);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->pod, b->pod) << policy;
    EXPECT_EQ(a->node, b->node) << policy;
    EXPECT_TRUE(a->cluster == b->cluster) << policy;
    EXPECT_TRUE(a->cluster.CheckInvariants().ok()) << policy;
    ASSERT_FALSE(a->arrived.empty());
    EXPECT_LE(a->arrived.back(), o.stop_at + 1e-9);
    for (size_t i = 0; i < a->arrived.size(); ++i) {
      EXPECT_LE(a->allocated[i], a->arrived[i] + 1e-9);
      EXPECT_NEAR(a->allocated[i] + a->idle[i], 1.0, 1e-9);
      EXPECT_LE(a->fragmented[i], a->idle[i] + 1e-9);
      if (i > 0) EXPECT_GE(a->arrived[i], a->arrived[i - 1]);
    }
    EXPECT_EQ(a->failed.back(),
              static_cast<int>(std::count(a->placed.begin(), a->placed.end(), 0)));
    EXPECT_EQ(a->cluster.num_allocations(),
              static_cast<int>(std::count(a->placed.begin(), a->placed.end(), 1)));
    o.seed = 4;
    auto c = ReplayOpenb(SmallNodes(), SmallPods(), o);
    ASSERT_TRUE(c.ok());
    EXPECT_NE(a->pod, c->pod) << policy;
  }
}

// Numbered shapes (the replay's path) keep every shape's node scores until a node changes; they
// must place exactly as the Placer's full scan does over the same nodes (best score, ties to the
// earlier node), for every strategy, random draws included, on a history with repeated shapes
// and model limits.
TEST(PlacerNumberedShapes, PlacesExactlyAsTheFullScan) {
  std::vector<OpenbPod> rows;
  const std::vector<std::vector<std::string>> specs = {{}, {}, {"T4"}, {"G2", "T4"}};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 160; ++i) {
    const int kind = static_cast<int>(rng() % 6);
    const int gpus = kind == 0 ? 0 : kind == 5 ? 2 : 1;
    const int milli = gpus == 0 ? 0 : kind >= 4 ? 1000 : 200 + 150 * static_cast<int>(rng() % 4);
    rows.push_back({"p" + std::to_string(i), 1000 * static_cast<int64_t>(1 + rng() % 8), 4096,
                    gpus, milli, gpus ? specs[rng() % specs.size()] : std::vector<std::string>{}});
  }
  for (const char* policy : {"random(seed=3)", "dotprod", "gpu-clustering", "gpu-packing", "bestfit",
                             "fgd"}) {
    ClusterState a = MakeCluster(SmallNodes()), b = MakeCluster(SmallNodes());
    a.set_clock([] { return int64_t{1}; });  // allocations record the time they were made
    b.set_clock([] { return int64_t{1}; });
    auto sa = Strategy(policy), sb = Strategy(policy);
    auto* oa = dynamic_cast<PlacementObserver*>(sa.get());
    auto* ob = dynamic_cast<PlacementObserver*>(sb.get());
    Placer placer;
    std::map<std::string, int> shape_ids;
    Placer numbered;
    int placed = 0;
    for (const OpenbPod& row : rows) {
      Pod pod = *OpenbPodToPod(row);
      OpenbPod shape = row;
      shape.name.clear();
      const std::string key = absl::StrCat(shape.cpu_milli, ",", shape.num_gpu, ",",
                                           shape.gpu_milli, ",", absl::StrJoin(shape.gpu_spec, "|"));
      const int id = shape_ids.try_emplace(key, static_cast<int>(shape_ids.size())).first->second;
      Placement want = placer.Place(a, {.pod = pod, .strategy = *sa, .use_cache = false});
      const Placement numbered_choice =
          numbered.Choose(b, {.pod = pod, .strategy = *sb, .shape = id, .reason = false});
      const int got = numbered_choice.node;
      ASSERT_EQ(got >= 0, want.ok()) << policy << " " << row.name;
      if (!want.ok()) continue;
      ++placed;
      ASSERT_TRUE(b.Reserve(numbered_choice.allocation).ok());
      ASSERT_TRUE(b.Commit(pod.name).ok());
      EXPECT_EQ(b.node(got).name, want.allocation.node) << policy << " " << row.name;
      EXPECT_EQ(Minors(*b.FindAllocation(pod.name)), Minors(want.allocation)) << policy;
      if (oa != nullptr) oa->OnBound(a.node(a.FindNode(want.allocation.node)), pod);
      if (ob != nullptr) ob->OnBound(b.node(got), pod);
    }
    EXPECT_GT(placed, 40) << policy;
    EXPECT_TRUE(a == b) << policy;
  }
}

// One Placer serving two states in turn (a copy, then each with its own history) and a fresh
// strategy must never answer from what it kept for the other: a numbered shape's scores belong
// to one strategy instance and to the node versions they were made at, so the Placer keeps
// answering as the full scan.
TEST(PlacerNumberedShapes, StartsAfreshForAnotherStateOrStrategy) {
  ClusterState a = MakeCluster(SmallNodes());
  a.set_clock([] { return int64_t{1}; });
  auto s1 = Strategy("bestfit");
  Placer numbered, scan;
  for (int k = 0; k < 6; ++k) {
    Pod pod = MakePod("a" + std::to_string(k), 2000, 1, 500);
    const Placement got = numbered.Choose(a, {.pod = pod, .strategy = *s1, .shape = 0});
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(a.Reserve(got.allocation).ok());
    ASSERT_TRUE(a.Commit(pod.name).ok());
  }
  ClusterState b = a;  // the same nodes and versions, another log
  auto s2 = Strategy("dotprod");  // another rule: its scores must not be taken for bestfit's
  for (int k = 0; k < 12; ++k) {
    ClusterState& state = k % 2 == 0 ? a : b;
    const PlacementStrategy& strategy = k % 3 == 0 ? *s2 : *s1;
    Pod pod = MakePod("b" + std::to_string(k), 2000, 1, 300 + 100 * (k % 4));
    const Placement want =
        scan.Choose(state, {.pod = pod, .strategy = strategy, .use_cache = false});
    const Placement got =
        numbered.Choose(state, {.pod = pod, .strategy = strategy, .shape = k % 4});
    ASSERT_EQ(got.ok(), want.ok()) << k;
    if (!got.ok()) continue;
    EXPECT_EQ(got.node, want.node) << k;
    EXPECT_EQ(Minors(got.allocation), Minors(want.allocation)) << k;
    ASSERT_TRUE(state.Reserve(got.allocation).ok());
    ASSERT_TRUE(state.Commit(pod.name).ok());
  }
  EXPECT_FALSE(a == b);  // the two histories did diverge
}

// Ties: by name, the smallest name; by the seeded order, a random node order per seed, which the
// final cluster lists first to last (nodes enter it in tie order). Under gpu-packing every node
// here ties for every pod (idle identical nodes; CPU-only pods score 0), so each pod must take the
// first node in that order with room for it.
TEST(OpenbReplay, TiesFollowTheNodeOrder) {
  std::vector<OpenbNode> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back({"n" + std::to_string(9 - i), 4000, 65536, 1, "T4"});
  std::vector<OpenbPod> pods = {{"gpu", 1000, 1024, 1, 1000, {}}};
  for (int i = 0; i < 3; ++i) pods.push_back({"cpu" + std::to_string(i), 4000, 1024, 0, 0, {}});
  auto check = [&](const OpenbReplayResult& r, const std::vector<std::string>& order) {
    std::map<std::string, int64_t> cpu_left, gpus_left;
    for (const OpenbNode& n : nodes) {
      cpu_left[n.name] = n.cpu_milli;
      gpus_left[n.name] = n.num_gpu;
    }
    for (size_t k = 0; k < r.pod.size(); ++k) {
      const OpenbPod& pod = pods[r.pod[k]];
      std::string want;
      for (const std::string& name : order)
        if (cpu_left[name] >= pod.cpu_milli && gpus_left[name] >= pod.num_gpu) {
          want = name;
          break;
        }
      ASSERT_EQ(r.placed[k] == 1, !want.empty()) << k;
      if (want.empty()) continue;
      EXPECT_EQ(nodes[r.node[k]].name, want) << k;
      cpu_left[want] -= pod.cpu_milli;
      gpus_left[want] -= pod.num_gpu;
    }
  };
  OpenbReplayOptions o;
  o.policy = "gpu-packing";
  o.stop_at = 0.2;
  o.ties = OpenbTies::kName;
  auto by_name = ReplayOpenb(nodes, pods, o);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  std::vector<std::string> names;
  for (const OpenbNode& n : nodes) names.push_back(n.name);
  std::sort(names.begin(), names.end());
  check(*by_name, names);
  o.ties = OpenbTies::kSeededOrder;
  std::set<std::string> first;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    o.seed = seed;
    auto r = ReplayOpenb(nodes, pods, o);
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<std::string> order;
    for (int i = 0; i < r->cluster.num_nodes(); ++i) order.push_back(r->cluster.node(i).name);
    check(*r, order);
    first.insert(order[0]);
  }
  EXPECT_GT(first.size(), 3u);  // a different order per seed
}

TEST(OpenbReplay, ResamplesUpToTheTarget) {
  OpenbReplayOptions o;
  o.policy = "bestfit";
  o.stop_at = 2.0;
  auto r = ReplayOpenb(SmallNodes(), SmallPods(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->pod.size(), SmallPods().size());  // the trace alone is below 200% of 48 GPUs
  EXPECT_GT(r->arrived.back(), 1.9);
  EXPECT_LE(r->arrived.back(), 2.0 + 1e-9);
}

TEST(OpenbReplay, BadInputIsAnErrorNamingTheRow) {
  OpenbReplayOptions o;
  auto pods = SmallPods();
  pods[5].gpu_milli = 1005;
  auto r = ReplayOpenb(SmallNodes(), pods, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pod row 5"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("gpu_milli"), std::string::npos);
  pods = SmallPods();
  pods[7].name = pods[6].name;
  EXPECT_FALSE(ReplayOpenb(SmallNodes(), pods, o).ok());
  auto nodes = SmallNodes();
  nodes[2].cpu_milli = -1;
  r = ReplayOpenb(nodes, SmallPods(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node row 2"), std::string::npos);
  // Memory that would overflow 64-bit bytes is refused instead of wrapping around.
  nodes = SmallNodes();
  nodes[1].memory_mib = std::numeric_limits<int64_t>::max() / 2;
  r = ReplayOpenb(nodes, SmallPods(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("memory_mib"), std::string::npos) << r.status();
  pods = SmallPods();
  pods[3].memory_mib = std::numeric_limits<int64_t>::max();
  r = ReplayOpenb(SmallNodes(), pods, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pod row 3"), std::string::npos) << r.status();
  o.policy = "no-such-policy";
  EXPECT_EQ(ReplayOpenb(SmallNodes(), SmallPods(), o).status().code(), absl::StatusCode::kNotFound);
  o.policy = "fgd";
  for (double stop_at : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e9}) {
    o.stop_at = stop_at;
    absl::StatusOr<OpenbReplayResult> refused = ReplayOpenb(SmallNodes(), SmallPods(), o);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << stop_at;
    EXPECT_NE(refused.status().message().find("stop_at must be > 0 and at most 100"), std::string::npos)
        << refused.status();
  }
  o.stop_at = 1.3;
  EXPECT_FALSE(ReplayOpenb({{"cpu-only", 8000, 1024, 0, ""}}, SmallPods(), o).ok());
}

// Workload and cluster specs from outside: numbers that are not integers in range are errors
// naming the entry and the field, never conversions.
TEST(Fragmentation, BadWorkloadNumbersAreErrorsNotConversions) {
  const struct {
    const char* json;
    const char* says;
  } cases[] = {
      {"[[0, 1e47, 1, 1]]", "entry 0: core must be an integer"},
      {"[[0, 100, 1099511627776, 1]]", "entry 0: gpu_count must be an integer"},
      {"[[0, 50, 1, 1], [-1, 0, 0, 1]]", "entry 1: cpu_milli must be an integer"},
      {"[[\"8\", 50, 1, 1]]", "entry 0: cpu_milli must be an integer"},
      {"[[0, 50, 1, \"heavy\"]]", "entry 0: weight must be a finite number"},
      {R"([{"core": 50, "gpu_count": 1, "models": "A100"}])", "entry 0: models must be a list"},
      {"[[0, 50, 1]]", "entry 0: expected [cpu_milli"},
  };
  for (const auto& c : cases) {
    auto w = GpuWorkload::FromJson(Json::parse(c.json));
    ASSERT_FALSE(w.ok()) << c.json;
    EXPECT_TRUE(absl::StrContains(w.status().message(), c.says)) << w.status();
  }
  EXPECT_TRUE(GpuWorkload::FromJson(Json::parse(
                  R"([{"core": 50, "gpu_count": 1, "models": ["A100"]}, [8000, 100, 1, 2]])"))
                  .ok());
}

TEST(GpuPoolSpec, CountsPastIntAreErrorsNotTruncations) {
  for (const char* spec : {R"({"v100": 4294967297})", R"({"v100": 18446744073709551615})",
                           R"({"v100": -1})"}) {
    auto pool = jobtime::GpuPool::FromJson(Json::parse(spec));
    ASSERT_FALSE(pool.ok()) << spec;
    EXPECT_TRUE(absl::StrContains(pool.status().message(), "GPU count must be an integer"))
        << pool.status();
  }
  EXPECT_TRUE(jobtime::GpuPool::FromJson(Json::parse(R"({"v100": 4})")).ok());
}

}  // namespace
}  // namespace gpufleet
