// Device choice on a node by each registered strategy (binpack, spread, topology): gpushare's bind
// example (designs.md: free 12207/8138/4069/16276 MiB, an 8138 MiB pod goes to gpu1),
// Koordinator-style cases (MostAllocated vs LeastAllocated, multi-GPU over 100, PCIe/NUMA scope),
// NVLink partitions of an 8-GPU Hopper board (pairs, quads, all 8), and ties to the lower minor.
// The tables follow Volcano's scenario tests: nodes, bound pods, pods in order -> node + devices.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/placement/placer.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::CheckedCluster;
using test::DeviceNames;
using test::ExpectedPlacement;
using test::GiB;
using test::MakeAllocation;
using test::MakePod;
using test::MiB;
using test::RunScenario;
using test::RunScenarioTable;
using test::Scenario;
using Names = std::vector<std::string>;

// gpushare's bind example: four 16276 MiB cards with 12207, 8138, 4069 and 16276 MiB free.
constexpr char kGpushareBindNode[] =
    R"({"name":"n1","cpu":"32","memory":"64Gi","gpus":{"count":4,"memory":"16276Mi"}})";
const std::vector<std::string> kGpushareBound = {
    R"({"pod":"u0","node":"n1","devices":[{"minor":0,"memory":"4069Mi"}]})",
    R"({"pod":"u1","node":"n1","devices":[{"minor":1,"memory":"8138Mi"}]})",
    R"({"pod":"u2","node":"n1","devices":[{"minor":2,"memory":"12207Mi"}]})",
};
constexpr char kGpuMem8138[] = R"({"name":"p","requests":{"aliyun.com/gpu-mem":"8138"}})";

// An 8-GPU node; gpu i sits on PCIe switch pcie[i] and NUMA node numa[i] ("" / -1: unknown).
std::string TopologyNode(const std::string& name, const std::vector<std::string>& pcie,
                         const std::vector<int>& numa, const std::string& extra = "") {
  std::string devices;
  for (size_t i = 0; i < pcie.size(); ++i) {
    absl::StrAppend(&devices, i ? "," : "",
                    absl::StrFormat(R"({"type":"gpu","minor":%d,"model":"A100","memory":"40Gi",)"
                                    R"("topology":{"socketID":%d,"nodeID":%d,"pcieID":"%s"}})",
                                    i, numa[i], numa[i], pcie[i]));
  }
  return absl::StrFormat(R"({"name":"%s","cpu":"64","memory":"512Gi",%s"devices":[%s]})", name,
                         extra, devices);
}

// Hopper HGX board: pairs, quads and all eight are the NVLink partitions.
std::string HopperNode(const std::string& groups) {
  return absl::StrFormat(
      R"({"name":"hgx","cpu":"128","memory":"1Ti","nvlink_groups":%s,)"
      R"("gpus":{"count":8,"model":"H100","memory":"80Gi"}})",
      groups);
}
constexpr char kHopperGroups[] =
    "[[0,1],[2,3],[4,5],[6,7],[0,1,2,3],[4,5,6,7],[0,1,2,3,4,5,6,7]]";
constexpr char kHopperGroupsReversed[] =
    "[[0,1,2,3,4,5,6,7],[4,5,6,7],[0,1,2,3],[6,7],[4,5],[2,3],[0,1]]";

std::string GpuPod(const std::string& name, int count, const std::string& extra = "") {
  return absl::StrFormat(R"({"name":"%s",%s"requests":{"nvidia.com/gpu":"%d"}})", name, extra,
                         count);
}

TEST(PlacementTest, GpushareBindPicksTheBestFitCard) {
  RunScenarioTable({
      {.name = "binpack: least free fitting card",
       .nodes = {kGpushareBindNode},
       .bound = kGpushareBound,
       .pods = {{kGpuMem8138, {.node = "n1", .devices = {"gpu/1"}}},
                {R"({"name":"q","requests":{"aliyun.com/gpu-mem":"8138"}})",
                 {.node = "n1", .devices = {"gpu/0"}}},
                {R"({"name":"r","requests":{"aliyun.com/gpu-mem":"16276"}})",
                 {.node = "n1", .devices = {"gpu/3"}}},
                {R"({"name":"s","requests":{"aliyun.com/gpu-mem":"4070"}})",
                 {.reason = "0/1 nodes are available: 1 Insufficient GPU memory in one device"}}},
       .strategy = "binpack"},
      {.name = "topology: single cards follow binpack",
       .nodes = {kGpushareBindNode},
       .bound = kGpushareBound,
       .pods = {{kGpuMem8138, {.node = "n1", .devices = {"gpu/1"}}}},
       .strategy = "topology"},
      {.name = "spread: most free card",
       .nodes = {kGpushareBindNode},
       .bound = kGpushareBound,
       .pods = {{kGpuMem8138, {.node = "n1", .devices = {"gpu/3"}}},
                {R"({"name":"q","requests":{"aliyun.com/gpu-mem":"8138"}})",
                 {.node = "n1", .devices = {"gpu/0"}}}},
       .strategy = "spread"},
  });
}

TEST(PlacementTest, GpushareBindGrantsExactlyTheRequestedMemory) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kGpushareBindNode));
  for (const std::string& b : kGpushareBound) ASSERT_OK(c.Reserve(MakeAllocation(b)));
  Placement r = c.Place(MakePod(kGpuMem8138));
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.allocation.devices.size(), 1u);
  EXPECT_EQ(r.allocation.devices[0].minor, 1);
  EXPECT_EQ(r.allocation.devices[0].core, 0);
  EXPECT_EQ(r.allocation.devices[0].memory_bytes, MiB(8138));
  EXPECT_EQ(c.state().used_memory()[1], MiB(16276));
}

// Koordinator's MostAllocated vs LeastAllocated: binpack fills the used node and card, spread the
// empty ones.
TEST(PlacementTest, SpreadAndBinpackPickDifferentNodesAndDevices) {
  const std::vector<std::string> nodes = {
      R"({"name":"used","cpu":"32","memory":"64Gi","gpus":{"count":4,"memory":"16Gi"}})",
      R"({"name":"empty","cpu":"32","memory":"64Gi","gpus":{"count":4,"memory":"16Gi"}})"};
  const std::vector<std::string> bound = {
      R"({"pod":"u","node":"used","devices":[{"minor":2,"core":50,"memory":"8Gi"}]})"};
  const char* half = R"({"name":"p","requests":{"koordinator.sh/gpu":"50"}})";
  RunScenario({.name = "binpack", .nodes = nodes, .bound = bound,
               .pods = {{half, {.node = "used", .devices = {"gpu/2"}}}}, .strategy = "binpack"});
  RunScenario({.name = "spread", .nodes = nodes, .bound = bound,
               .pods = {{half, {.node = "empty", .devices = {"gpu/0"}}}}, .strategy = "spread"});
  // On one node, binpack stacks onto the used card, spread takes the first untouched one.
  RunScenario({.name = "binpack one node", .nodes = {nodes[0]}, .bound = bound,
               .pods = {{half, {.node = "used", .devices = {"gpu/2"}}},
                        {R"({"name":"q","requests":{"koordinator.sh/gpu":"50"}})",
                         {.node = "used", .devices = {"gpu/0"}}}},
               .strategy = "binpack"});
  RunScenario({.name = "spread one node", .nodes = {nodes[0]}, .bound = bound,
               .pods = {{half, {.node = "used", .devices = {"gpu/0"}}},
                        {R"({"name":"q","requests":{"koordinator.sh/gpu":"50"}})",
                         {.node = "used", .devices = {"gpu/1"}}}},
               .strategy = "spread"});
}

TEST(PlacementTest, MultiGpuOverHundredTakesWholeUntouchedCards) {
  const std::vector<std::string> nodes = {
      R"({"name":"n","cpu":"32","memory":"64Gi","gpus":{"count":4,"memory":"16Gi"}})"};
  const std::vector<std::string> bound = {
      R"({"pod":"u","node":"n","devices":[{"minor":0,"core":10,"memory":"1Gi"}]})"};
  for (const char* strategy : {"binpack", "spread", "topology"}) {
    RunScenario({.name = std::string("koord 200 ") + strategy,
                 .nodes = nodes,
                 .bound = bound,
                 .pods = {{R"({"name":"p","requests":{"koordinator.sh/gpu":"200"}})",
                           {.node = "n", .devices = {"gpu/1", "gpu/2"}}},
                          {R"({"name":"q","requests":{"koordinator.sh/gpu":"200"}})",
                           {.reason = "Insufficient gpu devices"}}},
                 .strategy = strategy});
  }
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(nodes[0]));
  Placement r = c.Place(MakePod(R"({"name":"p","requests":{"koordinator.sh/gpu":"200"}})"));
  ASSERT_TRUE(r.ok());
  for (const DeviceGrant& g : r.allocation.devices) {
    EXPECT_EQ(g.core, 100);
    EXPECT_EQ(g.memory_bytes, GiB(16));
  }
}

// gpu0,1 on p0; 2,3 on p1; 4,5 on p2; 6,7 on p3. NUMA 0 holds 0-3, NUMA 1 holds 4-7.
const std::vector<std::string> kPcie = {"p0", "p0", "p1", "p1", "p2", "p2", "p3", "p3"};
const std::vector<int> kNuma = {0, 0, 0, 0, 1, 1, 1, 1};

TEST(PlacementTest, RequiredPcieAndNumaScopesAreHonoured) {
  const std::vector<std::string> nodes = {TopologyNode("n", kPcie, kNuma)};
  const std::vector<std::string> bound = {
      R"({"pod":"u","node":"n","devices":[{"minor":1,"core":10,"memory":"1Gi"}]})"};
  RunScenario({.name = "no scope, binpack", .nodes = nodes, .bound = bound,
               .pods = {{GpuPod("p", 2), {.node = "n", .devices = {"gpu/0", "gpu/2"}}}}});
  RunScenario({.name = "pcie scope", .nodes = nodes, .bound = bound,
               .pods = {{GpuPod("p", 2, R"("scope":"pcie",)"),
                         {.node = "n", .devices = {"gpu/2", "gpu/3"}}},
                        {GpuPod("q", 4, R"("scope":"pcie",)"),
                         {.reason = "no PCIe switch has 4 free fitting gpu devices"}},
                        {GpuPod("r", 4, R"("scope":"numa",)"),
                         {.node = "n", .devices = {"gpu/4", "gpu/5", "gpu/6", "gpu/7"}}}}});
}

TEST(PlacementTest, TopologyPrefersOneSwitchThenOneNumaNode) {
  const std::vector<std::string> nodes = {TopologyNode("n", kPcie, kNuma)};
  const std::vector<std::string> bound = {
      R"({"pod":"u","node":"n","devices":[{"minor":1,"core":10,"memory":"1Gi"}]})"};
  RunScenario({.name = "topology", .nodes = nodes, .bound = bound,
               .pods = {{GpuPod("p", 2), {.node = "n", .devices = {"gpu/2", "gpu/3"}}},
                        {GpuPod("q", 3), {.node = "n", .devices = {"gpu/4", "gpu/5", "gpu/6"}}},
                        {GpuPod("r", 1), {.node = "n", .devices = {"gpu/0"}}}},
               .strategy = "topology"});
}

TEST(PlacementTest, UnknownTopologyNeverSatisfiesAScope) {
  const std::vector<std::string> nodes = {TopologyNode(
      "n", {"", "", "", "p1", "p1", "", "", ""}, {-1, -1, -1, 0, -1, -1, -1, -1})};
  RunScenario({.name = "unknown", .nodes = nodes,
               .pods = {{GpuPod("a", 2, R"("scope":"numa",)"),
                         {.reason = "no NUMA node has 2 free fitting gpu devices"}},
                        {GpuPod("b", 3, R"("scope":"pcie",)"),
                         {.reason = "no PCIe switch has 3 free fitting gpu devices"}},
                        {GpuPod("c", 2, R"("scope":"pcie",)"),
                         {.node = "n", .devices = {"gpu/3", "gpu/4"}}},
                        {GpuPod("d", 2), {.node = "n", .devices = {"gpu/0", "gpu/1"}}}}});
}

// Ties go to the lower minor even when switch names sort the other way round.
TEST(PlacementTest, TiesGoToTheLowerMinorWhateverTheGroupNames) {
  const std::vector<std::string> nodes = {TopologyNode(
      "n", {"zz", "zz", "aa", "aa", "mm", "mm", "bb", "bb"}, {1, 1, 1, 1, 0, 0, 0, 0})};
  for (const char* strategy : {"binpack", "spread", "topology"}) {
    RunScenario({.name = std::string("pcie scope ") + strategy, .nodes = nodes,
                 .pods = {{GpuPod("p", 2, R"("scope":"pcie",)"),
                           {.node = "n", .devices = {"gpu/0", "gpu/1"}}},
                          {GpuPod("q", 4, R"("scope":"numa",)"),
                           {.node = "n", .devices = {"gpu/4", "gpu/5", "gpu/6", "gpu/7"}}}},
                 .strategy = strategy});
  }
  RunScenario({.name = "topology without scope", .nodes = nodes,
               .pods = {{GpuPod("p", 2), {.node = "n", .devices = {"gpu/0", "gpu/1"}}}},
               .strategy = "topology"});
  for (const char* strategy : {"binpack", "spread", "topology"}) {
    RunScenario({.name = std::string("single card ") + strategy,
                 .nodes = {R"({"name":"n","cpu":"8","memory":"8Gi","gpus":{"count":4,"memory":"16Gi"}})"},
                 .pods = {{R"({"name":"p","requests":{"aliyun.com/gpu-mem":"100"}})",
                           {.node = "n", .devices = {"gpu/0"}}}},
                 .strategy = strategy});
  }
}

TEST(PlacementTest, NvlinkRejectsSizesThatAreNotPartitions) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(HopperNode(kHopperGroups)));
  FitResult f = c.Filter(MakePod(GpuPod("p", 3)), "hgx");
  EXPECT_EQ(f.code, FitCode::kUnschedulableAndUnresolvable);
  EXPECT_EQ(f.reason, "request of 3 GPUs is not an NVLink partition size (2, 4, 8)");
  EXPECT_TRUE(c.Filter(MakePod(GpuPod("p", 8)), "hgx").ok());
  EXPECT_TRUE(c.Filter(MakePod(GpuPod("p", 1)), "hgx").ok());
}

TEST(PlacementTest, NvlinkKeepsUntouchedQuadsWhole) {
  for (const char* groups : {kHopperGroups, kHopperGroupsReversed}) {
    SCOPED_TRACE(groups);
    RunScenario({.name = "pair, pair, quad",
                 .nodes = {HopperNode(groups)},
                 .pods = {{GpuPod("a", 2), {.node = "hgx", .devices = {"gpu/0", "gpu/1"}}},
                          {GpuPod("b", 2), {.node = "hgx", .devices = {"gpu/2", "gpu/3"}}},
                          {GpuPod("c", 4),
                           {.node = "hgx", .devices = {"gpu/4", "gpu/5", "gpu/6", "gpu/7"}}},
                          {GpuPod("d", 2), {.reason = "Insufficient gpu devices"}}},
                 .strategy = "topology"});
    RunScenario({.name = "pair, quad, pair",
                 .nodes = {HopperNode(groups)},
                 .pods = {{GpuPod("a", 2), {.node = "hgx", .devices = {"gpu/0", "gpu/1"}}},
                          {GpuPod("b", 4),
                           {.node = "hgx", .devices = {"gpu/4", "gpu/5", "gpu/6", "gpu/7"}}},
                          {GpuPod("c", 2), {.node = "hgx", .devices = {"gpu/2", "gpu/3"}}}},
                 .strategy = "topology"});
    // Four GPUs are free but no quad is whole.
    RunScenario({.name = "fragmented",
                 .nodes = {HopperNode(groups)},
                 .bound = {R"({"pod":"u","node":"hgx","devices":[{"minor":0,"core":100,"memory":"80Gi"},
                                                                 {"minor":1,"core":100,"memory":"80Gi"}]})",
                           R"({"pod":"v","node":"hgx","devices":[{"minor":4,"core":100,"memory":"80Gi"},
                                                                 {"minor":5,"core":100,"memory":"80Gi"}]})"},
                 .pods = {{GpuPod("a", 4), {.reason = "no free NVLink group of 4 GPUs"}},
                          {GpuPod("b", 2), {.node = "hgx", .devices = {"gpu/2", "gpu/3"}}}},
                 .strategy = "topology"});
    RunScenario({.name = "all eight",
                 .nodes = {HopperNode(groups)},
                 .pods = {{GpuPod("a", 8),
                           {.node = "hgx",
                            .devices = {"gpu/0", "gpu/1", "gpu/2", "gpu/3", "gpu/4", "gpu/5",
                                        "gpu/6", "gpu/7"}}}},
                 .strategy = "topology"});
  }
}

// After the pair {4,5} is used, the next pair goes into the same quad ({6,7}), not into the
// untouched quad where it would break {0-3}.
TEST(PlacementTest, NvlinkPairGoesIntoTheUsedQuad) {
  RunScenario({.name = "used quad",
               .nodes = {HopperNode(kHopperGroups)},
               .bound = {R"({"pod":"u","node":"hgx","devices":[{"minor":4,"core":100,"memory":"80Gi"},
                                                               {"minor":5,"core":100,"memory":"80Gi"}]})"},
               .pods = {{GpuPod("a", 2), {.node = "hgx", .devices = {"gpu/6", "gpu/7"}}},
                        {GpuPod("b", 4),
                         {.node = "hgx", .devices = {"gpu/0", "gpu/1", "gpu/2", "gpu/3"}}}},
               .strategy = "topology"});
}

// Koordinator's packing on a board of two PCIe switches per NUMA node with one busy GPU (gpu5 on
// switch p2, NUMA node 1): a single card goes next to the busy one, a pair into the other switch
// of the same NUMA node, and NUMA node 0 stays whole for the 4-GPU job that comes last.
TEST(PlacementTest, TopologyPacksIntoTheAlreadyBrokenDomain) {
  const std::vector<std::string> nodes = {TopologyNode("n", kPcie, kNuma)};
  const std::vector<std::string> busy = {
      R"({"pod":"u","node":"n","devices":[{"minor":5,"core":100,"memory":"40Gi"}]})"};
  RunScenario({.name = "single, pair, quad",
               .nodes = nodes,
               .bound = busy,
               .pods = {{GpuPod("one", 1), {.node = "n", .devices = {"gpu/4"}}},
                        {GpuPod("pair", 2), {.node = "n", .devices = {"gpu/6", "gpu/7"}}},
                        {GpuPod("quad", 4, R"("scope":"numa",)"),
                         {.node = "n", .devices = {"gpu/0", "gpu/1", "gpu/2", "gpu/3"}}}},
               .strategy = "topology"});
  // A pair that no switch can hold whole goes to the used NUMA node (three free GPUs there).
  RunScenario({.name = "triple",
               .nodes = nodes,
               .bound = busy,
               .pods = {{GpuPod("three", 3), {.node = "n", .devices = {"gpu/4", "gpu/6", "gpu/7"}}},
                        {GpuPod("four", 4, R"("scope":"numa",)"),
                         {.node = "n", .devices = {"gpu/0", "gpu/1", "gpu/2", "gpu/3"}}}},
               .strategy = "topology"});
  // A required NUMA scope: the pair still goes to the broken NUMA node's untouched switch.
  RunScenario({.name = "numa scope",
               .nodes = nodes,
               .bound = busy,
               .pods = {{GpuPod("pair", 2, R"("scope":"numa",)"),
                         {.node = "n", .devices = {"gpu/6", "gpu/7"}}}},
               .strategy = "topology"});
}

// A shared request takes the already shared card first (best fit beats PCIe packing); when it
// does not fit there, the untouched card whose switch and NUMA node already carry work.
TEST(PlacementTest, TopologySharedRequestsPreferSharedCardsThenPack) {
  const std::vector<std::string> nodes = {TopologyNode("n", kPcie, kNuma)};
  const std::vector<std::string> bound = {
      R"({"pod":"x","node":"n","devices":[{"minor":3,"core":100,"memory":"40Gi"}]})",
      R"({"pod":"y","node":"n","devices":[{"minor":6,"core":50,"memory":"20Gi"}]})"};
  RunScenario({.name = "shared",
               .nodes = nodes,
               .bound = bound,
               .pods = {{R"({"name":"a","requests":{"koordinator.sh/gpu":"30"}})",
                         {.node = "n", .devices = {"gpu/6"}}},
                        {R"({"name":"b","requests":{"koordinator.sh/gpu":"60"}})",
                         {.node = "n", .devices = {"gpu/2"}}}},
               .strategy = "topology"});
}

// On an NVLink board a single card goes into the already broken quad too.
TEST(PlacementTest, NvlinkSingleCardGoesIntoTheUsedQuad) {
  for (const char* groups : {kHopperGroups, kHopperGroupsReversed}) {
    SCOPED_TRACE(groups);
    RunScenario({.name = "single",
                 .nodes = {HopperNode(groups)},
                 .bound = {R"({"pod":"u","node":"hgx","devices":[{"minor":4,"core":100,"memory":"80Gi"},
                                                                 {"minor":5,"core":100,"memory":"80Gi"}]})"},
                 .pods = {{GpuPod("a", 1), {.node = "hgx", .devices = {"gpu/6"}}},
                          {GpuPod("b", 1), {.node = "hgx", .devices = {"gpu/7"}}},
                          {GpuPod("c", 4),
                           {.node = "hgx", .devices = {"gpu/0", "gpu/1", "gpu/2", "gpu/3"}}}},
                 .strategy = "topology"});
  }
}

// With domain_weight the node score also counts the domains a placement would break: of two
// equally allocated nodes, the one where a card fits into an already used switch wins.
TEST(PlacementTest, TopologyDomainWeightScoresWhatAPlacementBreaks) {
  const std::vector<std::string> nodes = {TopologyNode("b", kPcie, kNuma),
                                          TopologyNode("a", kPcie, kNuma)};
  const std::vector<std::string> bound = {
      R"({"pod":"u","node":"b","devices":[{"minor":0,"core":100,"memory":"40Gi"},
                                          {"minor":1,"core":100,"memory":"40Gi"}]})",
      R"({"pod":"v","node":"a","devices":[{"minor":0,"core":100,"memory":"40Gi"},
                                          {"minor":2,"core":100,"memory":"40Gi"}]})"};
  RunScenario({.name = "MostAllocated alone: the earlier node",
               .nodes = nodes, .bound = bound,
               .pods = {{GpuPod("p", 1), {.node = "b", .devices = {"gpu/2"}}}},
               .strategy = "topology"});
  RunScenario({.name = "domains count: nothing broken on a",
               .nodes = nodes, .bound = bound,
               .pods = {{GpuPod("p", 1), {.node = "a", .devices = {"gpu/1"}}}},
               .strategy = "topology(domain_weight=0.5)"});
  EXPECT_FALSE(MakeStrategy("topology(domain_weight=2)").ok());
}

TEST(PlacementTest, GpuAndRdmaAreChosenTogether) {
  RunScenario(
      {.name = "gpu+rdma",
       .nodes = {R"({"name":"n","cpu":"32","memory":"64Gi","devices":[
                    {"type":"gpu","minor":0,"memory":"16Gi"},{"type":"gpu","minor":1,"memory":"16Gi"},
                    {"type":"rdma","minor":0},{"type":"rdma","minor":1}]})"},
       .pods = {{R"({"name":"a","requests":{"nvidia.com/gpu":"1","koordinator.sh/rdma":"50"}})",
                 {.node = "n", .devices = {"gpu/0", "rdma/0"}}},
                {R"({"name":"b","requests":{"koordinator.sh/rdma":"100"}})",
                 {.node = "n", .devices = {"rdma/1"}}},
                {R"({"name":"c","requests":{"koordinator.sh/rdma":"60"}})",
                 {.reason = "Insufficient rdma devices"}}}});
}

TEST(PlacementTest, UnhealthyCardsInAScenario) {
  RunScenario(
      {.name = "unhealthy",
       .nodes = {R"({"name":"n","cpu":"32","memory":"64Gi","devices":[
                    {"type":"gpu","minor":0,"memory":"16Gi","health":false},
                    {"type":"gpu","minor":1,"memory":"16Gi"}]})"},
       .pods = {{GpuPod("a", 1), {.node = "n", .devices = {"gpu/1"}}},
                {GpuPod("b", 1), {.reason = "0/1 nodes are available"}}}});
}

TEST(PlacementTest, PlaceRestrictedToCandidates) {
  CheckedCluster c;
  for (const char* n : {"a", "b", "c"})
    ASSERT_OK(c.AddNodeJson(absl::StrFormat(
        R"({"name":"%s","cpu":"8","memory":"8Gi","gpus":{"count":1,"memory":"16Gi"}})", n)));
  auto binpack = test::StrategyOrDie("binpack");
  std::vector<int> only_c = {2};
  Placement r =
      test::PlaceWith(Placer(), c.state(), MakePod(GpuPod("p", 1)), *binpack, true, &only_c);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.allocation.node, "c");
  r = test::PlaceWith(Placer(), c.state(), MakePod(GpuPod("q", 1)), *binpack, true, &only_c);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, "0/1 nodes are available: 1 Insufficient gpu devices");
  EXPECT_OK(c.state().CheckInvariants());
}

TEST(PlacementTest, ScoresFollowAllocation) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(R"({"name":"a","cpu":"8","memory":"8Gi","gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.AddNodeJson(R"({"name":"b","cpu":"8","memory":"8Gi","gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.Reserve(MakeAllocation(
      R"({"pod":"u","node":"a","devices":[{"minor":0,"core":100,"memory":"16Gi"}]})")));
  Pod p = MakePod(GpuPod("p", 1));
  auto binpack = test::StrategyOrDie("binpack");
  auto spread = test::StrategyOrDie("spread");
  EXPECT_GT(ScoreOnNode(c.state(), p, 0, *binpack), ScoreOnNode(c.state(), p, 1, *binpack));
  EXPECT_LT(ScoreOnNode(c.state(), p, 0, *spread), ScoreOnNode(c.state(), p, 1, *spread));
  for (int node : {0, 1}) {
    EXPECT_GE(ScoreOnNode(c.state(), p, node, *binpack), 0.0);
    EXPECT_LE(ScoreOnNode(c.state(), p, node, *binpack), 100.0);
    EXPECT_DOUBLE_EQ(ScoreOnNode(c.state(), p, node, *binpack) + ScoreOnNode(c.state(), p, node, *spread), 100.0);
  }
}

// Place takes a fast path for common requests; whatever path it takes, it must place a pod exactly
// when some node passes FitsNodeConstraints + Filter, on a feasible node with the best score
// (earliest node on ties). Checked over a seeded random mix of nodes, pods and releases.
TEST(PlacementTest, PlaceAgreesWithFilterAndScore) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(R"({"name":"mixed","cpu":"64","memory":"256Gi","gpus":{"count":4,"model":"V100M16","memory":"16Gi"}})"));
  ASSERT_OK(c.AddNodeJson(R"({"name":"whole","cpu":"64","memory":"256Gi","gpu_sharing":"whole","gpus":{"count":2,"model":"A100","memory":"40Gi"}})"));
  ASSERT_OK(c.AddNodeJson(R"({"name":"shared","cpu":"64","memory":"256Gi","gpu_sharing":"shared","gpus":{"count":2,"model":"T4","memory":"15Gi"}})"));
  ASSERT_OK(c.AddNodeJson(HopperNode(kHopperGroups)));
  ASSERT_OK(c.AddNodeJson(R"({"name":"tainted","cpu":"64","memory":"256Gi","taints":[{"key":"k","value":"v"}],"gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.AddNodeJson(R"({"name":"cpu","cpu":"16","memory":"64Gi"})"));
  ASSERT_OK(c.SetDeviceHealth("mixed", "gpu", 3, false));
  const std::vector<std::string> requests = {
      R"("requests":{"cpu":"1","nvidia.com/gpu":"1"})",
      R"("requests":{"nvidia.com/gpu":"2"})",
      R"("requests":{"nvidia.com/gpu":"4"})",
      R"("requests":{"koordinator.sh/gpu":"30"})",
      R"("requests":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"50"})",
      R"("requests":{"koordinator.sh/gpu-core":"25","koordinator.sh/gpu-memory":"6Gi"})",
      R"("requests":{"aliyun.com/gpu-mem":"5000"})",
      R"("requests":{"cpu":"4","memory":"8Gi"})",
      R"("gpu_models":["A100"],"requests":{"nvidia.com/gpu":"1"})",
      R"("tolerations":[{"operator":"Exists"}],"requests":{"koordinator.sh/gpu":"200"})",
  };
  std::vector<std::unique_ptr<PlacementStrategy>> strategies;
  for (const char* name : {"binpack", "spread", "topology", "topology(domain_weight=0.5)"})
    strategies.push_back(test::StrategyOrDie(name));
  std::mt19937 rng(20240601);
  std::vector<std::string> held;
  int placed = 0, pending = 0;
  for (int k = 0; k < 300; ++k) {
    Pod pod = MakePod(absl::StrCat(R"({"name":"p)", k, R"(",)", requests[rng() % requests.size()],
                                   "}"));
    const PlacementStrategy& strategy = *strategies[rng() % strategies.size()];
    const ClusterState& s = c.state();
    int best = -1;
    double best_score = -1;
    for (int i = 0; i < s.num_nodes(); ++i) {
      if (!FitsNodeConstraints(pod, s.node(i)).ok() || !s.Filter(pod, i).ok()) continue;
      double score = ScoreOnNode(s, pod, i, strategy);
      if (score > best_score) best = i, best_score = score;
    }
    SCOPED_TRACE(pod.name);
    Placement r = c.Place(pod, strategy);
    ASSERT_EQ(r.ok(), best >= 0) << r.reason;
    if (r.ok()) {
      ++placed;
      EXPECT_EQ(r.allocation.node, s.node(best).name);
      held.push_back(pod.name);
    } else {
      ++pending;
      EXPECT_NE(r.reason.find("0/6 nodes are available"), std::string::npos) << r.reason;
    }
    if (!held.empty() && rng() % 3 == 0) {
      size_t victim = rng() % held.size();
      ASSERT_OK(c.Release(held[victim]));
      held.erase(held.begin() + victim);
    }
  }
  EXPECT_GT(placed, 50);
  EXPECT_GT(pending, 10);
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// Joint GPU + RDMA: the NIC under the GPU's PCIe switch, else one on its NUMA node, else any.
TEST(PlacementTest, RdmaFollowsTheChosenGpusPcieSwitchThenNumaNode) {
  const std::string node = R"({"name":"n","cpu":"32","memory":"64Gi","devices":[
      {"type":"gpu","minor":0,"memory":"16Gi","topology":{"pcieID":"p0","nodeID":0}},
      {"type":"gpu","minor":1,"memory":"16Gi","topology":{"pcieID":"p1","nodeID":0}},
      {"type":"gpu","minor":2,"memory":"16Gi","topology":{"pcieID":"p2","nodeID":1}},
      {"type":"rdma","minor":0,"topology":{"pcieID":"p0","nodeID":0}},
      {"type":"rdma","minor":1,"topology":{"pcieID":"p2","nodeID":1}},
      {"type":"rdma","minor":2,"topology":{"nodeID":0}}]})";
  test::RunScenarioTable({
      {.name = "same switch wins over the lower minor",
       .nodes = {node},
       .bound = {R"({"pod":"x","node":"n","devices":[{"minor":0,"core":100,"memory":"16Gi"},
                                                     {"minor":1,"core":100,"memory":"16Gi"}]})"},
       .pods = {{R"({"name":"a","requests":{"nvidia.com/gpu":"1","koordinator.sh/rdma":"50"}})",
                 {.node = "n", .devices = {"gpu/2", "rdma/1"}}}}},
      {.name = "no NIC on the switch: the NUMA node's",
       .nodes = {node},
       .bound = {R"({"pod":"x","node":"n","devices":[{"minor":0,"core":100,"memory":"16Gi"},
                                                     {"minor":2,"core":100,"memory":"16Gi"}]})"},
       .pods = {{R"({"name":"a","requests":{"nvidia.com/gpu":"1","koordinator.sh/rdma":"50"}})",
                 {.node = "n", .devices = {"gpu/1", "rdma/0"}}}}},
      {.name = "near NICs full: any NIC, never a refusal",
       .nodes = {node},
       .bound = {R"({"pod":"x","node":"n","devices":[{"minor":0,"core":100,"memory":"16Gi"},
                                                     {"minor":1,"core":100,"memory":"16Gi"},
                                                     {"type":"rdma","minor":1,"core":100}]})"},
       .pods = {{R"({"name":"a","requests":{"nvidia.com/gpu":"1","koordinator.sh/rdma":"50"}})",
                 {.node = "n", .devices = {"gpu/2", "rdma/0"}}}}},
  });
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// The fast path accepts a shared request on untouched cards only when the smallest card holds it;
// mixed card sizes must still be checked card by card.
TEST(PlacementTest, SharedRequestsOnCardsOfDifferentSizes) {
  const std::string node = R"({"name":"n","cpu":"32","memory":"64Gi","devices":[
      {"type":"gpu","minor":0,"memory":"16Gi"},{"type":"gpu","minor":1,"memory":"80Gi"}]})";
  test::RunScenarioTable({
      {.name = "too big for the small card, fits the big one",
       .nodes = {node},
       .pods = {{R"({"name":"a","requests":{"koordinator.sh/gpu-core":"10","koordinator.sh/gpu-memory":"20Gi"}})",
                 {.node = "n", .devices = {"gpu/1"}}}}},
      {.name = "two such pods need two big cards",
       .nodes = {node},
       .pods = {{R"({"name":"a","requests":{"koordinator.sh/gpu-core":"60","koordinator.sh/gpu-memory":"20Gi"}})",
                 {.node = "n", .devices = {"gpu/1"}}},
                {R"({"name":"b","requests":{"koordinator.sh/gpu-core":"60","koordinator.sh/gpu-memory":"20Gi"}})",
                 {.reason = "Insufficient"}}}},
      {.name = "bigger than every card",
       .nodes = {node},
       .pods = {{R"({"name":"a","requests":{"koordinator.sh/gpu-core":"10","koordinator.sh/gpu-memory":"90Gi"}})",
                 {.reason = "Insufficient"}}}},
  });
}

}  // namespace
}  // namespace gpufleet
