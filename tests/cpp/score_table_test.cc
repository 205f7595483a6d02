// The score table must never change an answer: a cluster placing with it and one scanning every
// node afresh go through the same random history and must agree on every placement.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/placement/score_table.h"
#include "gpufleet/placement/placer.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::MakeNode;
using test::MakePod;

std::string NodeJson(int i, std::mt19937& rng) {
  static const char* kModels[] = {"A100", "V100", "T4"};
  const int gpus = 2 + static_cast<int>(rng() % 7);
  std::string extra = i % 5 == 0 ? R"(,"labels":{"pool":"train"})" : "";
  return absl::StrFormat(
      R"({"name":"n%d","cpu":"%d","memory":"256Gi"%s,
          "gpus":{"count":%d,"model":"%s","memory":"%dGi"}})",
      i, 16 + static_cast<int>(rng() % 64), extra, gpus, kModels[rng() % 3],
      rng() % 2 ? 80 : 16);
}

// A small pool of shapes so that shapes repeat, as the replicas of a workload do.
std::vector<std::string> Shapes() {
  return {
      R"({"requests":{"nvidia.com/gpu":"1"}})",
      R"({"requests":{"nvidia.com/gpu":"2","cpu":"4"}})",
      R"({"requests":{"koordinator.sh/gpu-core":"30","koordinator.sh/gpu-memory-ratio":"30"}})",
      R"({"requests":{"aliyun.com/gpu-mem":"6000"}})",
      R"({"requests":{"koordinator.sh/gpu":"50","cpu":"2"},"gpu_models":["A100"]})",
      R"({"requests":{"nvidia.com/gpu":"2"},"scope":"pcie"})",
      R"({"requests":{"cpu":"8","memory":"16Gi"}})",
      R"({"requests":{"nvidia.com/gpu":"1"},"node_selector":{"pool":"train"}})",
  };
}

Pod ShapedPod(const std::string& shape, int serial) {
  std::string json = shape;
  json.insert(1, absl::StrCat(R"("name":"p)", serial, R"(",)"));
  return MakePod(json);
}

void RunTwin(const std::string& strategy_spec, uint32_t seed) {
  SCOPED_TRACE(absl::StrCat(strategy_spec, " seed ", seed));
  auto strategy = test::StrategyOrDie(strategy_spec);
  ASSERT_NE(strategy, nullptr);
  ClusterState cached, fresh;
  Placer cached_placer, fresh_placer;
  for (ClusterState* s : {&cached, &fresh}) s->set_clock([] { return int64_t{1}; });
  std::mt19937 rng(seed);
  int next_node = 0;
  for (; next_node < 12; ++next_node) {
    Node n = MakeNode(NodeJson(next_node, rng));
    ASSERT_OK(cached.AddNode(n));
    ASSERT_OK(fresh.AddNode(n));
  }
  const std::vector<std::string> shapes = Shapes();
  std::vector<std::string> placed;
  for (int step = 0; step < 400; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      Pod pod = ShapedPod(shapes[rng() % shapes.size()], step);
      Placement a = test::PlaceWith(cached_placer, cached, pod, *strategy);
      Placement b = test::PlaceWith(fresh_placer, fresh, pod, *strategy, true, nullptr,
                                    /*use_cache=*/false);
      ASSERT_EQ(a.ok(), b.ok()) << "step " << step;
      if (a.ok()) {
        EXPECT_EQ(a.allocation.node, b.allocation.node) << "step " << step;
        EXPECT_EQ(test::DeviceNames(a.allocation), test::DeviceNames(b.allocation));
        placed.push_back(pod.name);
      } else {
        EXPECT_EQ(a.reason, b.reason);
      }
    } else if (op < 8 && !placed.empty()) {
      const size_t k = rng() % placed.size();
      ASSERT_OK(cached.Release(placed[k]));
      ASSERT_OK(fresh.Release(placed[k]));
      placed.erase(placed.begin() + k);
    } else if (op == 8) {
      const int node = static_cast<int>(rng() % cached.num_nodes());
      const Node& n = cached.node(node);
      const int minor = n.devices.empty() ? 0 : n.devices[rng() % n.devices.size()].minor;
      const bool healthy = rng() % 2;
      EXPECT_EQ(cached.SetDeviceHealth(n.name, "gpu", minor, healthy).ok(),
                fresh.SetDeviceHealth(n.name, "gpu", minor, healthy).ok());
    } else if (rng() % 2) {
      Node n = MakeNode(NodeJson(next_node++, rng));
      ASSERT_OK(cached.AddNode(n));
      ASSERT_OK(fresh.AddNode(n));
    } else {
      // Remove an empty node, which renumbers the ones after it.
      for (int i = 0; i < cached.num_nodes(); ++i) {
        const std::string name = cached.node(i).name;
        bool used = false;
        for (const Allocation* a : cached.Allocations()) used |= a->node == name;
        if (used) continue;
        ASSERT_OK(cached.RemoveNode(name));
        ASSERT_OK(fresh.RemoveNode(name));
        break;
      }
    }
    ASSERT_OK(cached.CheckInvariants());
  }
  EXPECT_TRUE(cached == fresh);
  EXPECT_GT(placed.size(), 10u) << "the history should keep pods placed";
}

TEST(ScoreTableTest, CachedPlacementEqualsAFullScanForEveryStrategy) {
  for (const std::string& name : Registry<PlacementStrategy>::Global().Names()) {
    auto s = MakeStrategy(name);
    ASSERT_OK(s);
    if (!(*s)->Deterministic()) continue;  // checked below
    for (uint32_t seed : {1u, 2u, 3u}) RunTwin(name, seed);
  }
}

TEST(ScoreTableTest, SeededRandomStrategyDrawsTheSameWithOrWithoutTheCache) {
  // Random is not deterministic per node, so Place must not reuse its scores (the table keeps
  // only which nodes fit): two runs with the same seed agree only if both draw for every node
  // that fits, every time, in node order.
  auto a = test::StrategyOrDie("random(seed=7)");
  auto b = test::StrategyOrDie("random(seed=7)");
  ASSERT_FALSE(a->Deterministic());
  ClusterState cached, fresh;
  Placer cached_placer, fresh_placer;
  std::mt19937 rng(5);
  for (int i = 0; i < 20; ++i) {
    Node n = MakeNode(NodeJson(i, rng));
    ASSERT_OK(cached.AddNode(n));
    ASSERT_OK(fresh.AddNode(n));
  }
  for (int k = 0; k < 60; ++k) {
    Pod pod = ShapedPod(R"({"requests":{"koordinator.sh/gpu":"20"}})", k);
    Placement x = test::PlaceWith(cached_placer, cached, pod, *a);
    Placement y =
        test::PlaceWith(fresh_placer, fresh, pod, *b, true, nullptr, /*use_cache=*/false);
    ASSERT_EQ(x.ok(), y.ok());
    if (x.ok()) EXPECT_EQ(x.allocation.node, y.allocation.node) << "pod " << k;
  }
}

TEST(ScoreTableTest, ShapesAreKeyedByEverythingButTheNameOrByTheirNumber) {
  using Kind = ScoreTable::Kind;
  ClusterState state;
  std::mt19937 rng(3);
  for (int i = 0; i < 3; ++i) ASSERT_OK(state.AddNode(MakeNode(NodeJson(i, rng))));
  auto binpack = test::StrategyOrDie("binpack");
  auto spread = test::StrategyOrDie("spread");
  ScoreTable table;
  Pod a = MakePod(R"({"name":"a","requests":{"nvidia.com/gpu":"1"}})");
  Pod b = MakePod(R"({"name":"b","requests":{"nvidia.com/gpu":"1"}})");
  Pod c = MakePod(R"({"name":"c","requests":{"nvidia.com/gpu":"1"},"node_selector":{"k":"v"}})");
  auto find = [&](const PlacementStrategy& s, const Pod& p, int number = -1,
                  Kind kind = Kind::kSummary) -> ScoreTable::Entry& {
    ScoreTable::Entry& e = table.Find(state, s, p, number);
    table.Prepare(state, e, p, kind);
    return e;
  };
  find(*binpack, a).seen[0] = 42;
  EXPECT_EQ(find(*binpack, b).seen[0], 42u) << "same shape, other name: same entry";
  EXPECT_EQ(find(*binpack, c).seen[0], 0u) << "a node selector is part of the shape";
  EXPECT_EQ(find(*spread, a).seen[0], 0u) << "another strategy never shares scores";
  EXPECT_EQ(table.size(), 3);
  EXPECT_EQ(find(*binpack, a, -1, Kind::kExact).seen[0], 0u) << "another kind starts afresh";
  // By number: the caller's key, whatever the pod; another strategy under it starts afresh.
  find(*binpack, a, 5).seen[0] = 7;
  EXPECT_EQ(find(*binpack, c, 5).seen[0], 7u);
  EXPECT_EQ(find(*spread, a, 5).seen[0], 0u);
  EXPECT_EQ(table.size(), 3) << "numbered shapes are kept apart from the compared ones";
  // Bounded: the least recently used compared entry goes first.
  for (int k = 0; k < ScoreTable::kMaxEntries + 4; ++k)
    find(*binpack, MakePod(absl::StrFormat(R"({"name":"x","requests":{"cpu":"%d"}})", k + 1)));
  EXPECT_EQ(table.size(), ScoreTable::kMaxEntries);
}

TEST(ScoreTableTest, EveryChangeToANodeBumpsItsVersion) {
  ClusterState s;
  ASSERT_OK(s.AddNode(MakeNode(R"({"name":"n","cpu":"8","memory":"32Gi",
                                   "gpus":{"count":2,"model":"A100","memory":"80Gi"}})")));
  uint64_t v = s.node_version(0);
  EXPECT_GT(v, 0u);
  auto binpack = test::StrategyOrDie("binpack");
  Placer placer;
  const Pod p = MakePod(R"({"name":"p","requests":{"nvidia.com/gpu":"1"}})");
  ASSERT_TRUE(test::PlaceWith(placer, s, p, *binpack, /*commit=*/false).ok());
  EXPECT_GT(s.node_version(0), v);
  v = s.node_version(0);
  ASSERT_OK(s.Unreserve("p"));
  EXPECT_GT(s.node_version(0), v);
  v = s.node_version(0);
  ASSERT_OK(s.SetDeviceHealth("n", "gpu", 1, false));
  EXPECT_GT(s.node_version(0), v);
  // A copy shares its original's versions until either changes; one placer serves both.
  ClusterState copy = s;
  for (int i = 0; i < s.num_nodes(); ++i) EXPECT_EQ(copy.node_version(i), s.node_version(i));
  Pod q = MakePod(R"({"name":"q","requests":{"nvidia.com/gpu":"1"}})");
  EXPECT_EQ(test::PlaceWith(placer, copy, q, *binpack).allocation.devices[0].minor, 0);
  EXPECT_NE(copy.node_version(0), s.node_version(0));
  EXPECT_EQ(test::PlaceWith(placer, s, q, *binpack).allocation.devices[0].minor, 0);
  // Versions come from one counter: the copy's change is never taken for the original's.
  ASSERT_OK(s.SetDeviceHealth("n", "gpu", 1, true));
  EXPECT_NE(copy.node_version(0), s.node_version(0));
}

}  // namespace
}  // namespace gpufleet
