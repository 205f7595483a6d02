// The Placer's scan (summaries first, devices for the best candidates only, scores cached per
// shape) must choose exactly what the plain definition chooses: filter every node, score every
// feasible one, take the best, ties to the earlier node. Random histories of placements,
// releases, health changes and node additions/removals, for every registered deterministic
// strategy, on nodes of mixed sizes, models, sharing modes, taints and NVLink groups.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/placement/placer.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::MakeNode;
using test::MakePod;

std::string MixedNodeJson(int i, std::mt19937& rng) {
  static const char* kModels[] = {"A100", "V100", "T4"};
  static const char* kSharing[] = {"mixed", "mixed", "whole", "shared"};
  const int gpus = rng() % 6 == 0 ? 0 : 1 + static_cast<int>(rng() % 8);
  std::string extra;
  if (i % 4 == 1) extra += R"(,"labels":{"pool":"train"})";
  if (i % 7 == 3) extra += R"(,"taints":[{"key":"dedicated","value":"infer"}])";
  if (gpus == 8 && rng() % 2) extra += R"(,"nvlink_groups":[[0,1,2,3],[4,5,6,7]])";
  extra += absl::StrFormat(R"(,"gpu_sharing":"%s")", kSharing[rng() % 4]);
  std::string gpu_json =
      gpus == 0 ? ""
                : absl::StrFormat(R"(,"gpus":{"count":%d,"model":"%s","memory":"%dGi"})", gpus,
                                  kModels[rng() % 3], rng() % 2 ? 80 : 16);
  return absl::StrFormat(R"({"name":"n%d","cpu":"%d","memory":"%dGi","pods":%d%s%s})", i,
                         8 + static_cast<int>(rng() % 64), 32 + static_cast<int>(rng() % 256),
                         4 + static_cast<int>(rng() % 12), extra, gpu_json);
}

std::vector<std::string> MixedShapes() {
  return {
      R"({"requests":{"nvidia.com/gpu":"1"}})",
      R"({"requests":{"nvidia.com/gpu":"4","cpu":"4"}})",
      R"({"requests":{"nvidia.com/gpu":"2"},"scope":"numa"})",
      R"({"requests":{"koordinator.sh/gpu-core":"30","koordinator.sh/gpu-memory-ratio":"30"}})",
      R"({"requests":{"koordinator.sh/gpu-core":"60","koordinator.sh/gpu-memory-ratio":"20"}})",
      R"({"requests":{"aliyun.com/gpu-mem":"9000"}})",
      R"({"requests":{"aliyun.com/gpu-mem":"30000","cpu":"2","memory":"8Gi"}})",
      R"({"requests":{"koordinator.sh/gpu":"50","cpu":"2"},"gpu_models":["A100"]})",
      R"({"requests":{"cpu":"8","memory":"16Gi"}})",
      R"({"requests":{"cpu":"500m"}})",
      R"({"requests":{"nvidia.com/gpu":"1"},"node_selector":{"pool":"train"}})",
      R"({"requests":{"nvidia.com/gpu":"2"},"tolerations":[{"operator":"Exists"}]})",
  };
}

Pod MixedShapePod(const std::string& shape, int serial) {
  std::string json = shape;
  json.insert(1, absl::StrCat(R"("name":"p)", serial, R"(",)"));
  return MakePod(json);
}

// The definition: every node filtered, every feasible node scored, the first best taken.
int ReferenceBest(const ClusterState& s, const Pod& pod, const PlacementStrategy& strategy) {
  int best = -1;
  double best_score = -1.0;
  for (int i = 0; i < s.num_nodes(); ++i) {
    if (!FitsNodeConstraints(pod, s.node(i)).ok() || !s.Filter(pod, i).ok()) continue;
    if (strategy.ScoreNeedsPlan() && !PlanOnNode(s, pod, i, strategy).ok()) continue;
    const double score = ScoreOnNode(s, pod, i, strategy);
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  return best;
}

void RunAgainstReference(const std::string& spec, uint32_t seed) {
  SCOPED_TRACE(absl::StrCat(spec, " seed ", seed));
  auto strategy = test::StrategyOrDie(spec);
  ASSERT_NE(strategy, nullptr);
  // Three placers, each on its own copy of the history: the score table found by comparing pods,
  // found by the shape's number (the openb replay's key), and no table at all.
  ClusterState cached, numbered, scanned;
  Placer cached_placer, numbered_placer, scanning_placer;
  for (ClusterState* s : {&cached, &numbered, &scanned}) s->set_clock([] { return int64_t{1}; });
  std::mt19937 rng(seed);
  int next_node = 0;
  for (; next_node < 16; ++next_node) {
    Node n = MakeNode(MixedNodeJson(next_node, rng));
    for (ClusterState* s : {&cached, &numbered, &scanned}) ASSERT_OK(s->AddNode(n));
  }
  const std::vector<std::string> shapes = MixedShapes();
  std::vector<std::string> placed;
  int placements = 0, misses = 0;
  for (int step = 0; step < 300; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      const int shape = static_cast<int>(rng() % shapes.size());
      Pod pod = MixedShapePod(shapes[shape], step);
      const int expect = ReferenceBest(scanned, pod, *strategy);
      Allocation expect_plan;
      if (expect >= 0) {
        const Placement planned = PlanOnNode(scanned, pod, expect, *strategy);
        ASSERT_TRUE(planned.ok());
        expect_plan = planned.allocation;
      }
      const std::string expect_reason =
          expect < 0 ? NoFitReason(scanned, pod, nullptr) : std::string();
      Placement a = test::PlaceWith(cached_placer, cached, pod, *strategy);
      Placement b = test::PlaceWith(scanning_placer, scanned, pod, *strategy, true, nullptr,
                                    /*use_cache=*/false);
      Placement c =
          numbered_placer.Place(numbered, {.pod = pod, .strategy = *strategy, .shape = shape});
      for (const Placement* r : {&a, &b, &c}) {
        ASSERT_EQ(r->ok(), expect >= 0) << "step " << step << ": " << r->reason;
        if (r->ok()) {
          EXPECT_EQ(r->allocation.node, scanned.node(expect).name) << "step " << step;
          EXPECT_EQ(test::DeviceNames(r->allocation), test::DeviceNames(expect_plan));
        } else {
          EXPECT_EQ(r->reason, expect_reason) << "step " << step;
        }
      }
      if (a.ok()) {
        placed.push_back(pod.name);
        ++placements;
      } else {
        ++misses;
      }
    } else if (op < 8 && !placed.empty()) {
      const size_t k = rng() % placed.size();
      for (ClusterState* s : {&cached, &numbered, &scanned}) ASSERT_OK(s->Release(placed[k]));
      placed.erase(placed.begin() + k);
    } else if (op == 8) {
      const int node = static_cast<int>(rng() % cached.num_nodes());
      const Node& n = cached.node(node);
      if (n.devices.empty()) continue;
      const int minor = n.devices[rng() % n.devices.size()].minor;
      const bool healthy = rng() % 2;
      for (ClusterState* s : {&cached, &numbered, &scanned})
        ASSERT_OK(s->SetDeviceHealth(n.name, "gpu", minor, healthy));
    } else if (rng() % 2) {
      Node n = MakeNode(MixedNodeJson(next_node++, rng));
      for (ClusterState* s : {&cached, &numbered, &scanned}) ASSERT_OK(s->AddNode(n));
    } else {
      for (int i = 0; i < cached.num_nodes(); ++i) {
        const std::string name = cached.node(i).name;
        bool used = false;
        for (const Allocation* a : cached.Allocations()) used |= a->node == name;
        if (used) continue;
        for (ClusterState* s : {&cached, &numbered, &scanned}) ASSERT_OK(s->RemoveNode(name));
        break;
      }
    }
    ASSERT_OK(cached.CheckInvariants());
  }
  EXPECT_TRUE(cached == scanned);
  EXPECT_TRUE(numbered == scanned);
  // The history must exercise both answers.
  EXPECT_GT(placements, 20);
  EXPECT_GT(misses, 5);
}

TEST(PlacerTest, ScanAndCacheChooseWhatFilteringAndScoringEveryNodeChooses) {
  int strategies = 0;
  for (const std::string& name : Registry<PlacementStrategy>::Global().Names()) {
    auto s = MakeStrategy(name);
    ASSERT_OK(s);
    // Strategies with random draws are compared seed for seed in score_table_test.cc.
    if (!(*s)->Deterministic()) continue;
    ++strategies;
    for (uint32_t seed : {11u, 12u, 13u, 14u}) RunAgainstReference(name, seed);
  }
  EXPECT_GE(strategies, 3);
}

// The one admission check and the one-pass plan: on every node of random states, for every shape,
// AdmitNode says what "labels, taints, then Filter" says (reason included), NodeAdmission's quick
// answer agrees with it, and a plan exists exactly where the node admits the pod, failing with
// the same reason.
TEST(PlacerTest, AdmissionAndPlanAgreeWithConstraintsThenFilter) {
  auto binpack = test::StrategyOrDie("binpack");
  std::mt19937 rng(31);
  ClusterState s;
  for (int i = 0; i < 24; ++i) ASSERT_OK(s.AddNode(MakeNode(MixedNodeJson(i, rng))));
  const std::vector<std::string> shapes = MixedShapes();
  int admitted = 0, refused = 0;
  for (int step = 0; step < 120; ++step) {
    Pod pod = MixedShapePod(shapes[rng() % shapes.size()], step);
    const NodeAdmission admission(s, pod);
    for (int i = 0; i < s.num_nodes(); ++i) {
      FitResult want = FitsNodeConstraints(pod, s.node(i));
      if (want.ok()) want = s.Filter(pod, i);
      const FitResult got = AdmitNode(s, pod, i);
      ASSERT_EQ(got.code, want.code) << "step " << step << " node " << i;
      EXPECT_EQ(got.reason, want.reason);
      EXPECT_EQ(admission.Admits(i), want.ok()) << "step " << step << " node " << i;
      const Placement plan = PlanOnNode(s, pod, i, *binpack);
      EXPECT_EQ(plan.ok(), want.ok()) << "step " << step << " node " << i << ": " << plan.reason;
      if (!want.ok()) EXPECT_EQ(plan.reason, want.reason);
      want.ok() ? ++admitted : ++refused;
    }
    // Keep the state moving: place the pod where the Placer says.
    test::PlaceWith(Placer(), s, pod, *binpack);
  }
  EXPECT_GT(admitted, 200);
  EXPECT_GT(refused, 200);
}

TEST(PlacerTest, SummariesFollowEveryMutation) {
  ClusterState s;
  ASSERT_OK(s.AddNode(MakeNode(R"({"name":"a","cpu":"8","memory":"32Gi","gpu_sharing":"whole",
                                   "gpus":{"count":2,"model":"A100","memory":"80Gi"}})")));
  ASSERT_OK(s.AddNode(MakeNode(R"({"name":"b","cpu":"4","memory":"16Gi",
                                   "taints":[{"key":"k","value":"v"}]})")));
  const NodeSummaries& m = s.summaries();
  EXPECT_EQ(m.size(), 2);
  EXPECT_EQ(m.whole_free[0], 2.0);
  EXPECT_EQ(m.shared_gpus[0], -1.0) << "a whole-only node offers no GPU to share";
  EXPECT_EQ(m.tainted, 1);
  Placer placer;
  auto binpack = test::StrategyOrDie("binpack");
  const Pod p = MakePod(R"({"name":"p","requests":{"nvidia.com/gpu":"1","cpu":"2"}})");
  ASSERT_TRUE(test::PlaceWith(placer, s, p, *binpack).ok());
  EXPECT_EQ(m.whole_free[0], 1.0);
  EXPECT_EQ(m.free_cpu[0], 6000.0);
  ASSERT_OK(s.SetDeviceHealth("a", "gpu", 1, false));
  EXPECT_EQ(m.whole_free[0], 0.0);
  ASSERT_OK(s.RemoveNode("b"));
  EXPECT_EQ(m.size(), 1);
  EXPECT_EQ(m.tainted, 0);
  ASSERT_OK(s.Release("p"));
  EXPECT_EQ(m.whole_free[0], 1.0);
  EXPECT_EQ(m.free_cpu[0], 8000.0);
  ASSERT_OK(s.CheckInvariants());
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// A cached entry reads only the nodes a state's change log names since it last looked. One
// placer serves a state and a copy of it in turn (each with its own log), and between some
// placements so many changes happen elsewhere that the log drops the entries the cache would
// need: every answer must still be the reference's.
TEST(PlacerTest, CachedAnswersFollowChangeLogsAcrossCopiesAndDroppedEntries) {
  auto binpack = test::StrategyOrDie("binpack");
  std::mt19937 rng(21);
  ClusterState a;
  for (int i = 0; i < 16; ++i) ASSERT_OK(a.AddNode(MakeNode(MixedNodeJson(i, rng))));
  ClusterState b = a;
  EXPECT_NE(a.changes().id(), b.changes().id()) << "a copy keeps a log of its own";
  Placer placer;
  const std::vector<std::string> shapes = MixedShapes();
  int placed = 0;
  for (int step = 0; step < 240; ++step) {
    ClusterState& s = step % 3 == 0 ? b : a;
    if (step % 40 == 39) {
      // Far more changes than the log keeps: a card of every node taken out and back in.
      const uint64_t before = s.changes().end();
      for (int k = 0; k < 100; ++k)
        for (int i = 0; i < s.num_nodes(); ++i) {
          const Node& n = s.node(i);
          if (n.devices.empty() || !n.devices[0].healthy) continue;
          ASSERT_OK(s.SetDeviceHealth(n.name, n.devices[0].type, n.devices[0].minor, false));
          ASSERT_OK(s.SetDeviceHealth(n.name, n.devices[0].type, n.devices[0].minor, true));
        }
      EXPECT_GT(s.changes().begin(), before) << "the log dropped entries the cache had not read";
    }
    Pod pod = MixedShapePod(shapes[rng() % shapes.size()], step);
    const int expect = ReferenceBest(s, pod, *binpack);
    Placement r = test::PlaceWith(placer, s, pod, *binpack);
    ASSERT_EQ(r.ok(), expect >= 0) << "step " << step << ": " << r.reason;
    if (r.ok()) {
      EXPECT_EQ(r.allocation.node, s.node(expect).name) << "step " << step;
      ++placed;
      if (rng() % 2) ASSERT_OK(s.Release(pod.name));
    }
  }
  EXPECT_GT(placed, 40);
  ASSERT_OK(a.CheckInvariants());
  ASSERT_OK(b.CheckInvariants());
}

TEST(PlacerTest, ChangeLogNamesChangedNodesAndRestartsWhenIndicesShift) {
  ClusterState s;
  ASSERT_OK(s.AddNode(MakeNode(R"({"name":"a","cpu":"8","memory":"32Gi"})")));
  ASSERT_OK(s.AddNode(MakeNode(R"({"name":"b","cpu":"8","memory":"32Gi"})")));
  const uint64_t id = s.changes().id();
  const uint64_t from = s.changes().end();
  Placer placer;
  auto binpack = test::StrategyOrDie("binpack");
  Placement r =
      test::PlaceWith(placer, s, MakePod(R"({"name":"p","requests":{"cpu":"1"}})"), *binpack);
  ASSERT_TRUE(r.ok());
  const int node = s.FindNode(r.allocation.node);
  ASSERT_GT(s.changes().end(), from);
  for (uint64_t p = from; p < s.changes().end(); ++p) EXPECT_EQ(s.changes().at(p), node);
  ASSERT_OK(s.Release("p"));
  EXPECT_EQ(s.changes().id(), id);
  ASSERT_OK(s.RemoveNode("b"));
  EXPECT_NE(s.changes().id(), id) << "positions taken before a removal must not be read after";
}

}  // namespace
}  // namespace gpufleet
