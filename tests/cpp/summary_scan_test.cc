// The summary scan exists as three builds of one loop (portable, AVX2, AVX-512), picked at run
// time. Every build this CPU runs must give bit-identical scores and the same first best node,
// equal to the one-node score the cached path uses, and every score must be exactly the
// strategy's own (binpack's MostAllocated, spread's LeastAllocated) on the nodes the summaries
// let through, while every node that admits the pod is let through (the narrow feasibility
// columns round toward admitting, never away). Node and pod sizes include byte counts no float
// holds exactly, and node counts that are not a multiple of the eight lanes.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/summary_scan.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::MakeNode;
using test::MakePod;

std::string ScanNodeJson(int i, std::mt19937& rng) {
  static const char* kSharing[] = {"mixed", "mixed", "whole", "shared"};
  const int gpus = rng() % 5 == 0 ? 0 : 1 + static_cast<int>(rng() % 8);
  std::string extra;
  if (i % 5 == 2) extra += R"(,"labels":{"pool":"train"})";
  if (i % 7 == 3) extra += R"(,"taints":[{"key":"dedicated","value":"infer"}])";
  extra += absl::StrFormat(R"(,"gpu_sharing":"%s")", kSharing[rng() % 4]);
  // Memory in odd byte counts (no float holds them), GPUs of 16 or 80 GiB, or 16276 MiB.
  static const char* kGpuMemory[] = {"16Gi", "80Gi", "16276Mi"};
  const std::string gpu_json =
      gpus == 0 ? ""
                : absl::StrFormat(R"(,"gpus":{"count":%d,"model":"A100","memory":"%s"})", gpus,
                                  kGpuMemory[rng() % 3]);
  return absl::StrFormat(R"({"name":"n%d","cpu":"%dm","memory":"%d","pods":%d%s%s})", i,
                         2000 + static_cast<int>(rng() % 62000),
                         (int64_t{1} << 34) + static_cast<int64_t>(rng()) * 977,
                         2 + static_cast<int>(rng() % 10), extra, gpu_json);
}

std::vector<std::string> ScanShapes() {
  return {
      R"({"requests":{"nvidia.com/gpu":"1"}})",
      R"({"requests":{"nvidia.com/gpu":"3","cpu":"1500m"}})",
      R"({"requests":{"koordinator.sh/gpu-core":"30","koordinator.sh/gpu-memory-ratio":"30"}})",
      R"({"requests":{"koordinator.sh/gpu-core":"70","koordinator.sh/gpu-memory-ratio":"45"}})",
      R"({"requests":{"aliyun.com/gpu-mem":"9000"}})",
      R"({"requests":{"aliyun.com/gpu-mem":"16275","cpu":"3"}})",
      R"({"requests":{"koordinator.sh/gpu":"50","cpu":"2"}})",
      R"({"requests":{"cpu":"7","memory":"16Gi"}})",
      R"({"requests":{"cpu":"1","memory":"17179869185"}})",
      R"({"requests":{"nvidia.com/gpu":"1"},"node_selector":{"pool":"train"}})",
      R"({"requests":{"nvidia.com/gpu":"2"},"tolerations":[{"operator":"Exists"}]})",
  };
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(SummaryScanTest, EveryBuildOfTheLoopGivesTheSameScoresAndNode) {
  std::vector<ScanPath> paths;
  for (ScanPath p : {ScanPath::kPortable, ScanPath::kAvx2, ScanPath::kAvx512})
    if (ScanPathAvailable(p)) paths.push_back(p);
  // The portable loop always runs; the others where the CPU has them (a CPU without AVX-512
  // compares the builds it has, and says so).
  if (!ScanPathAvailable(ScanPath::kAvx512))
    std::printf("note: this CPU has no AVX-512; its build of the scan is not compared here\n");
  auto binpack = test::StrategyOrDie("binpack");
  auto spread = test::StrategyOrDie("spread");
  const std::vector<std::string> shapes = ScanShapes();
  std::mt19937 rng(7);
  int compared = 0, let_through = 0;
  for (int nodes : {1, 7, 8, 37, 64}) {
    ClusterState s;
    s.set_clock([] { return int64_t{1}; });
    for (int i = 0; i < nodes; ++i) ASSERT_OK(s.AddNode(MakeNode(ScanNodeJson(i, rng))));
    Placer placer;
    for (int step = 0; step < 40; ++step) {
      const int shape = static_cast<int>(rng() % shapes.size());
      std::string json = shapes[shape];
      json.insert(1, absl::StrCat(R"("name":"p)", nodes, "-", step, R"(",)"));
      const Pod pod = MakePod(json);
      const SummaryRequest q(pod);
      ASSERT_TRUE(q.exact);
      const NodeAdmission admission(s, pod);
      for (bool most : {true, false}) {
        SCOPED_TRACE(absl::StrCat(nodes, " nodes, step ", step, most ? " most" : " least"));
        const PlacementStrategy& strategy = most ? *binpack : *spread;
        SummaryScan scan;
        std::vector<double> want(nodes);
        const SummaryScan::Result portable =
            scan.ScoreAll(s, admission, q, most, want.data(), ScanPath::kPortable);
        ASSERT_TRUE(portable.scanned);
        EXPECT_EQ(portable.best, FirstBest(want.data(), nodes));
        for (ScanPath path : paths) {
          std::vector<double> got(nodes, 12345.0);
          const SummaryScan::Result r = scan.ScoreAll(s, admission, q, most, got.data(), path);
          EXPECT_EQ(r.best, portable.best) << "path " << static_cast<int>(path);
          EXPECT_EQ(scan.ScoreAll(s, admission, q, most, nullptr, path).best, portable.best);
          for (int i = 0; i < nodes; ++i)
            ASSERT_TRUE(SameBits(got[i], want[i]))
                << "path " << static_cast<int>(path) << " node " << i << ": " << got[i]
                << " != " << want[i];
          ++compared;
        }
        for (int i = 0; i < nodes; ++i) {
          double one = 0;
          ASSERT_TRUE(SummaryScan::ScoreOne(s, admission, q, most, i, &one));
          EXPECT_TRUE(SameBits(one, want[i])) << "node " << i;
          const bool admits = AdmitNode(s, pod, i).ok();
          if (admits) EXPECT_NE(want[i], kNoNode) << "node " << i << " admits the pod";
          if (want[i] != kNoNode) {
            ++let_through;
            EXPECT_TRUE(SameBits(want[i], strategy.ScoreNode(s.View(i), pod, {})))
                << "node " << i << ": " << want[i];
          }
        }
      }
      // Keep the state moving.
      test::PlaceWith(placer, s, pod, *binpack);
    }
  }
  EXPECT_GT(compared, 300);
  EXPECT_GT(let_through, 500);
}

// A free amount no float holds must still admit a request of exactly that amount.
TEST(SummaryScanTest, FloatColumnsRoundTowardAdmitting) {
  ClusterState s;
  ASSERT_OK(s.AddNode(MakeNode(R"({"name":"n","cpu":"4","memory":"17179869185",
                                   "gpus":{"count":1,"model":"A100","memory":"16385Mi"}})")));
  const int64_t memory = s.node(0).memory_bytes;
  ASSERT_NE(static_cast<double>(static_cast<float>(memory)), static_cast<double>(memory));
  EXPECT_GE(static_cast<double>(s.summaries().free_memory[0]), static_cast<double>(memory));
  EXPECT_LE(static_cast<double>(NodeSummaries::FloatAtMost(memory)), static_cast<double>(memory));
  auto binpack = test::StrategyOrDie("binpack");
  Placer placer;
  const Pod exact = MakePod(R"({"name":"a","requests":{"cpu":"1","memory":"17179869185"}})");
  EXPECT_TRUE(placer.Choose(s, {.pod = exact, .strategy = *binpack, .use_cache = false}).ok());
  const Pod over = MakePod(R"({"name":"b","requests":{"cpu":"1","memory":"17179869186"}})");
  const Placement none = placer.Choose(s, {.pod = over, .strategy = *binpack, .use_cache = false});
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.reason, "0/1 nodes are available: 1 Insufficient memory (more than the node has)");
}

}  // namespace
}  // namespace gpufleet
