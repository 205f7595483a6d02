// NVIDIA MIG: geometry from the data table, nodes that declare GPUs in MIG mode (mixed and single
// strategies), placement of nvidia.com/mig-<profile> and nvidia.com/gpu requests on instances, a
// MIG GPU never handed out whole or shared, and round trips through JSON, snapshots and
// annotations.
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "absl/strings/str_format.h"
#include "gpufleet/core/mig.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/io/snapshot.h"
#include "gpufleet/io/spec_json.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::CheckedCluster;
using test::ExpectedPlacement;
using test::GiB;
using test::IsError;
using test::MakeNode;
using test::MakePod;
using test::RunScenario;
using test::Scenario;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// An A100 80GB node: gpu 0 split as 3g.40gb + 2g.20gb + 1g.10gb, gpu 1 whole.
constexpr char kMixedNode[] = R"({"name":"a100","cpu":"64","memory":"512Gi","devices":[
    {"type":"gpu","minor":0,"id":"GPU-0","model":"A100-80GB","mig":[
       {"profile":"3g.40gb","start":0,"id":"MIG-a"},
       {"profile":"2g.20gb","start":4,"id":"MIG-b"},
       {"profile":"1g.10gb","start":6,"id":"MIG-c"}]},
    {"type":"gpu","minor":1,"id":"GPU-1","model":"A100-80GB","memory":"80Gi"}]})";

// Two H100s, each as seven 1g.10gb instances, offered as nvidia.com/gpu.
constexpr char kSingleNode[] = R"({"name":"h100","cpu":"64","memory":"512Gi",
    "mig_strategy":"single","gpus":{"count":2,"model":"H100-80GB","mig":[
       {"profile":"1g.10gb","start":0},{"profile":"1g.10gb","start":1},
       {"profile":"1g.10gb","start":2},{"profile":"1g.10gb","start":3},
       {"profile":"1g.10gb","start":4},{"profile":"1g.10gb","start":5},
       {"profile":"1g.10gb","start":6}]}})";

std::string NodeWithInstances(const std::string& model, const std::string& instances) {
  return absl::StrFormat(
      R"({"name":"n1","devices":[{"type":"gpu","minor":2,"model":"%s","mig":[%s]}]})", model,
      instances);
}

absl::StatusOr<Node> Parse(const std::string& json) {
  return NodeFromJson(test::ParseJsonOrFail(json));
}

TEST(MigGeometryTest, EveryProfileFitsTheEightMemorySlotsFromEveryStart) {
  for (const MigModel& m : mig_data::kModels) {
    std::set<std::string_view> names;
    for (const MigProfile& p : m.profiles) {
      SCOPED_TRACE(absl::StrFormat("%s %s", m.name, p.name));
      EXPECT_TRUE(names.insert(p.name).second) << "profile listed twice";
      EXPECT_NE(p.start_slots, 0);
      EXPECT_LE(p.compute_slices, mig_data::kComputeSlices);
      for (int k = 0; k < mig_data::kMemorySlots; ++k)
        if (p.start_slots & (1u << k)) EXPECT_LE(k + p.memory_slices, mig_data::kMemorySlots);
      EXPECT_EQ(FindMigProfile(m, p.name), &p);
      EXPECT_TRUE(IsKnownMigProfile(p.name));
    }
    EXPECT_EQ(FindMigModel(m.name), &m);
  }
  EXPECT_EQ(FindMigModel("NVIDIA A100-SXM4-80GB"), FindMigModel("A100-80GB"));
  EXPECT_EQ(FindMigModel("V100"), nullptr);
  EXPECT_FALSE(IsKnownMigProfile("3g.41gb"));
}

// Every row of every model agrees with the way NVIDIA names profiles and with its own placements:
// "<c>g.<m>gb" has c compute slices and m GB, the GPU's memory times memory_slices / 8 rounded to
// the nearest GB; a profile without media engines has one placement per instance (a "+me" profile
// may start anywhere but exists once per GPU); and each model lists one profile per size.
TEST(MigGeometryTest, EveryRowMatchesItsNameAndItsPlacements) {
  for (const MigModel& m : mig_data::kModels) {
    std::set<std::pair<int, int>> sizes;
    for (const MigProfile& p : m.profiles) {
      SCOPED_TRACE(absl::StrFormat("%s %s", m.name, p.name));
      int compute = 0, gb = 0;
      char suffix[8] = {0};
      ASSERT_GE(std::sscanf(std::string(p.name).c_str(), "%dg.%dgb%7s", &compute, &gb, suffix), 2);
      EXPECT_EQ(compute, p.compute_slices);
      EXPECT_EQ(gb, static_cast<int>(std::lround(m.memory_gib * p.memory_slices / 8.0)));
      const bool media = std::string(suffix) == "+me";
      EXPECT_TRUE(media || suffix[0] == 0) << "unknown suffix " << suffix;
      int placements = 0;
      for (int k = 0; k < mig_data::kMemorySlots; ++k) placements += (p.start_slots >> k) & 1;
      EXPECT_EQ(p.max_instances, media ? 1 : placements);
      if (!media) EXPECT_TRUE(sizes.insert({p.compute_slices, p.memory_slices}).second);
      EXPECT_LE(p.max_instances * p.compute_slices, mig_data::kComputeSlices);
    }
  }
}

TEST(MigGeometryTest, PublishedLayoutsAreAccepted) {
  // Layouts from NVIDIA's user guide: 7 x 1g, 4g + 3g, 3g + 3g, 2g + 2g + 2g + 1g, one 7g.
  for (const auto& [model, instances] : std::vector<std::pair<std::string, std::string>>{
           {"A100-40GB",
            R"({"profile":"1g.5gb","start":0},{"profile":"1g.5gb","start":1},
               {"profile":"1g.5gb","start":2},{"profile":"1g.5gb","start":3},
               {"profile":"1g.5gb","start":4},{"profile":"1g.5gb","start":5},
               {"profile":"1g.5gb+me","start":6})"},
           {"A100-80GB", R"({"profile":"4g.40gb","start":0},{"profile":"3g.40gb","start":4})"},
           {"H100-80GB", R"({"profile":"3g.40gb","start":4},{"profile":"3g.40gb","start":0})"},
           {"H200-141GB",
            R"({"profile":"2g.35gb","start":0},{"profile":"2g.35gb","start":2},
               {"profile":"2g.35gb","start":4},{"profile":"1g.18gb","start":6})"},
           {"H200-141GB", R"({"profile":"7g.141gb","start":0})"}}) {
    SCOPED_TRACE(model + ": " + instances);
    EXPECT_OK(Parse(NodeWithInstances(model, instances)));
  }
}

TEST(MigGeometryTest, InvalidGeometryNamesNodeGpuAndInstance) {
  struct Case {
    std::string model, instances;
    std::vector<std::string> parts;
  };
  for (const Case& c : std::vector<Case>{
           {"A100-40GB", R"({"profile":"3g.40gb","start":0})",
            {"node n1: gpu 2 (A100-40GB) mig[0] 3g.40gb at slot 0", "not offered by A100-40GB",
             "3g.20gb"}},
           {"A100-80GB", R"({"profile":"1g.10gb","start":0},{"profile":"3g.40gb","start":2})",
            {"gpu 2 (A100-80GB) mig[1] 3g.40gb at slot 2", "may start at slots 0, 4 only"}},
           {"H100-80GB", R"({"profile":"3g.40gb","start":0},{"profile":"2g.20gb","start":2})",
            {"mig[1] 2g.20gb at slot 2", "overlaps mig[0] 3g.40gb at slot 0"}},
           {"H100-80GB", R"({"profile":"1g.10gb","start":4},{"profile":"1g.10gb","start":4})",
            {"mig[1] 1g.10gb at slot 4", "overlaps mig[0]"}},
           {"A100-80GB",
            R"({"profile":"1g.10gb+me","start":0},{"profile":"1g.10gb+me","start":1})",
            {"mig[1] 1g.10gb+me at slot 1", "at most 1 1g.10gb+me instance per GPU"}},
           {"A100-80GB", R"({"profile":"7g.80gb","start":0},{"profile":"1g.10gb","start":6})",
            {"mig[1]", "overlaps mig[0] 7g.80gb"}},
           {"V100", R"({"profile":"1g.10gb","start":0})",
            {"node n1: gpu 2: model \"V100\" has no MIG geometry", "A100-80GB"}},
       }) {
    SCOPED_TRACE(c.model + ": " + c.instances);
    EXPECT_TRUE(IsError(Parse(NodeWithInstances(c.model, c.instances)), kInvalid, c.parts));
  }
  // Field errors name the device entry and the instance.
  EXPECT_TRUE(IsError(Parse(NodeWithInstances("A100-80GB", R"({"profile":"1g.10gb","start":8})")),
                      kInvalid, {"node n1 devices[0] mig[0]: start: 8 is not a memory slot"}));
  EXPECT_TRUE(IsError(Parse(NodeWithInstances("A100-80GB", R"({"profile":"1g.10gb"})")), kInvalid,
                      {"devices[0] mig[0]: start: is missing"}));
  EXPECT_TRUE(IsError(Parse(NodeWithInstances("A100-80GB", "")), kInvalid,
                      {"devices[0]: mig: lists no instances"}));
  EXPECT_TRUE(IsError(Parse(NodeWithInstances("A100-80GB", R"({"profile":"1g.10gb","strat":0})")),
                      kInvalid, {"strat", "start"}));
  EXPECT_TRUE(IsError(
      Parse(R"({"name":"n1","devices":[{"type":"rdma","mig":[{"profile":"1g.10gb","start":0}]}]})"),
      kInvalid, {"only a gpu can be in MIG mode"}));
}

TEST(MigNodeTest, MixedStrategyMakesEachInstanceADeviceOfItsProfile) {
  Node n = MakeNode(kMixedNode);
  ASSERT_EQ(n.devices.size(), 4u);
  const Device& big = n.devices[0];
  EXPECT_EQ(big.type, "mig-3g.40gb");
  EXPECT_EQ(big.minor, 0);
  EXPECT_EQ(big.id, "MIG-a");
  EXPECT_EQ(big.memory_bytes, GiB(40));
  EXPECT_EQ(big.mig, (MigSlot{"3g.40gb", 0, "GPU-0", 0, GiB(80)}));
  EXPECT_EQ(n.devices[1].type, "mig-2g.20gb");
  EXPECT_EQ(n.devices[1].minor, 4);
  EXPECT_EQ(n.devices[1].memory_bytes, GiB(20));
  EXPECT_EQ(n.devices[2].type, "mig-1g.10gb");
  EXPECT_EQ(n.devices[2].minor, 6);
  EXPECT_EQ(n.devices[3].type, "gpu");
  EXPECT_FALSE(n.devices[3].mig.active());
}

TEST(MigNodeTest, AGpuInMigModeIsNeverAlsoAWholeGpu) {
  EXPECT_TRUE(IsError(Parse(R"({"name":"n1","devices":[
      {"type":"gpu","minor":0,"model":"A100-80GB","mig":[{"profile":"7g.80gb","start":0}]},
      {"type":"gpu","minor":0,"model":"A100-80GB","memory":"80Gi"}]})"),
                      kInvalid, {"node n1: gpu 0 is in MIG mode and cannot also be offered whole"}));
}

TEST(MigNodeTest, SingleStrategyRules) {
  Node n = MakeNode(kSingleNode);
  ASSERT_EQ(n.devices.size(), 14u);
  EXPECT_EQ(n.gpu_sharing, GpuSharing::kWholeOnly);
  for (const Device& d : n.devices) {
    EXPECT_EQ(d.type, "gpu");
    EXPECT_EQ(d.memory_bytes, GiB(10));
  }
  EXPECT_EQ(n.devices[7].minor, 8);  // gpu 1, slot 0
  EXPECT_TRUE(IsError(Parse(R"({"name":"s","mig_strategy":"single","devices":[
      {"type":"gpu","minor":0,"model":"A100-80GB","mig":[{"profile":"3g.40gb","start":0},
                                                         {"profile":"4g.40gb","start":4}]}]})"),
                      kInvalid, {"mig[1] 4g.40gb at slot 4", "slots 0 only"}));
  EXPECT_TRUE(IsError(Parse(R"({"name":"s","mig_strategy":"single","devices":[
      {"type":"gpu","minor":0,"model":"A100-80GB","mig":[{"profile":"3g.40gb","start":0},
                                                         {"profile":"2g.20gb","start":4}]}]})"),
                      kInvalid, {"node s: mig_strategy single: all instances must have one profile"}));
  EXPECT_TRUE(IsError(Parse(R"({"name":"s","mig_strategy":"single","devices":[
      {"type":"gpu","minor":0,"model":"A100-80GB","mig":[{"profile":"7g.80gb","start":0}]},
      {"type":"gpu","minor":1,"model":"A100-80GB","memory":"80Gi"}]})"),
                      kInvalid, {"every GPU must be in MIG mode; gpu 1 is not"}));
  EXPECT_TRUE(IsError(Parse(R"({"name":"s","mig_strategy":"single","gpu_sharing":"shared",
      "gpus":{"count":1,"model":"A100-80GB","mig":[{"profile":"7g.80gb","start":0}]}})"),
                      kInvalid, {"gpu_sharing must be whole"}));
  EXPECT_TRUE(IsError(Parse(R"({"name":"s","mig_strategy":"one"})"), kInvalid,
                      {"node s: mig_strategy", "not one of mixed, single"}));
}

TEST(MigNodeTest, ABadNodeLeavesTheClusterUnchanged) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kMixedNode));
  const ClusterState before = c.state();
  Node bad = MakeNode(kSingleNode);
  bad.name = "bad";
  bad.devices[1].mig.start = 3;  // collides with the instance at slot 3
  bad.devices[1].minor = 3;
  EXPECT_TRUE(IsError(c.AddNode(bad), kInvalid, {"node bad: gpu 0 (H100-80GB) mig[", "overlaps"}));
  EXPECT_TRUE(c.state() == before);
}

TEST(MigRequestTest, MigResourcesParseAsWholeInstancesOfTheirProfile) {
  Pod p = MakePod(R"({"name":"p","requests":{"nvidia.com/mig-3g.40gb":"2","nvidia.com/gpu":"1",
                      "nvidia.com/mig-1g.5gb":"1"}})");
  ASSERT_EQ(p.devices.size(), 3u);
  EXPECT_EQ(p.devices[0].type, "gpu");
  EXPECT_EQ(p.devices[1].type, "mig-1g.5gb");
  EXPECT_EQ(p.devices[2].type, "mig-3g.40gb");
  EXPECT_EQ(p.devices[2].count, 2);
  EXPECT_TRUE(p.devices[2].whole());
  auto parse = [](const std::string& requests) {
    return PodFromJson(test::ParseJsonOrFail(R"({"name":"p","requests":)" + requests + "}"));
  };
  EXPECT_TRUE(IsError(parse(R"({"nvidia.com/mig-3g.41gb":"1"})"), kInvalid,
                      {"pod p: request nvidia.com/mig-3g.41gb", "not a MIG profile", "3g.40gb"}));
  EXPECT_TRUE(IsError(parse(R"({"nvidia.com/mig-1g.10gb":"0"})"), kInvalid,
                      {"positive number of instances"}));
  EXPECT_TRUE(IsError(parse(R"({"nvidia.com/mig-1g.10gb":"1.5"})"), kInvalid,
                      {"nvidia.com/mig-1g.10gb"}));
  EXPECT_TRUE(IsError(parse(R"({"nvidia.com/mig-1g.10gb":"5000"})"), kInvalid,
                      {"a node has at most"}));
}

TEST(MigPlacementTest, MixedStrategy) {
  RunScenario(Scenario{
      "mixed",
      {kMixedNode},
      {},
      {{R"({"name":"big","requests":{"nvidia.com/mig-3g.40gb":"1"}})", {"a100", {"mig-3g.40gb/0"}}},
       {R"({"name":"big2","requests":{"nvidia.com/mig-3g.40gb":"1"}})",
        {"", {}, "Insufficient mig-3g.40gb devices"}},
       {R"({"name":"none","requests":{"nvidia.com/mig-1g.20gb":"1"}})",
        {"", {}, "node has no mig-1g.20gb devices"}},
       {R"({"name":"small","requests":{"nvidia.com/mig-1g.10gb":"1","nvidia.com/mig-2g.20gb":"1"}})",
        {"a100", {"mig-1g.10gb/6", "mig-2g.20gb/4"}}},
       // Shared and whole GPU requests see gpu 1 only: gpu 0 is its instances.
       {R"({"name":"share","requests":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"50"}})",
        {"a100", {"gpu/1"}}},
       {R"({"name":"share2","requests":{"koordinator.sh/gpu-core":"60","koordinator.sh/gpu-memory-ratio":"60"}})",
        {"", {}, "Insufficient"}},
       {R"({"name":"whole","requests":{"nvidia.com/gpu":"1"}})", {"", {}, "Insufficient gpu"}}}});
}

TEST(MigPlacementTest, SingleStrategyGivesInstancesAsGpusAndNeverShares) {
  RunScenario(Scenario{
      "single",
      {kSingleNode},
      {},
      {{R"({"name":"three","requests":{"nvidia.com/gpu":"3"}})",
        {"h100", {"gpu/0", "gpu/1", "gpu/2"}}},
       {R"({"name":"shared","requests":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"50"}})",
        {"", {}, "node's GPUs are MIG instances, handed out whole only"}},
       {R"({"name":"mem","requests":{"aliyun.com/gpu-mem":"1024"}})",
        {"", {}, "MIG instances, handed out whole only"}},
       {R"({"name":"eleven","requests":{"nvidia.com/gpu":"11"}})",
        {"h100", {"gpu/10", "gpu/11", "gpu/12", "gpu/13", "gpu/14", "gpu/3", "gpu/4", "gpu/5",
                  "gpu/6", "gpu/8", "gpu/9"}}},
       {R"({"name":"more","requests":{"nvidia.com/gpu":"1"}})", {"", {}, "Insufficient gpu"}}}});
}

TEST(MigRoundTripTest, JsonSnapshotAndAnnotationsKeepProfileParentAndSlot) {
  for (const char* json : {kMixedNode, kSingleNode}) {
    Node n = MakeNode(json);
    absl::StatusOr<Node> again = NodeFromJson(NodeToJson(n));
    ASSERT_OK(again);
    EXPECT_EQ(*again, n) << NodeToJson(n).dump();
  }
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kMixedNode));
  ASSERT_OK(c.AddNodeJson(kSingleNode));
  Placement a = c.Place(MakePod(R"({"name":"a","requests":{"nvidia.com/mig-2g.20gb":"1"}})"));
  Placement b = c.Place(MakePod(R"({"name":"b","requests":{"nvidia.com/gpu":"2"}})"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.allocation.devices[0].memory_bytes, GiB(20));
  const std::string text = SaveSnapshot(c.state());
  absl::StatusOr<ClusterState> loaded = LoadSnapshot(text);
  ASSERT_OK(loaded);
  EXPECT_TRUE(*loaded == c.state());
  EXPECT_EQ(SaveSnapshot(*loaded), text);

  // A restart rebuilds the MIG grant from its annotation, memory included.
  const Node& node = c.state().node(c.state().FindNode("a100"));
  Pod pod = MakePod(R"({"name":"a","requests":{"nvidia.com/mig-2g.20gb":"1"}})");
  auto annotations = AllocationAnnotations(a.allocation, node, /*gpushare=*/false);
  absl::StatusOr<std::vector<DeviceGrant>> grants = GrantsFromAnnotations(annotations, node, pod);
  ASSERT_OK(grants);
  EXPECT_EQ(*grants, a.allocation.devices);
  ClusterState fresh;
  ASSERT_OK(fresh.AddNode(node));
  absl::StatusOr<Allocation> restored = RestoreBoundPod(fresh, pod, "a100", annotations);
  ASSERT_OK(restored);
  EXPECT_EQ(restored->devices, a.allocation.devices);
}

}  // namespace
}  // namespace gpufleet
