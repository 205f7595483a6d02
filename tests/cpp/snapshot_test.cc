// The whole accounting as JSON: save -> load gives an equal state and the same text; a corrupt
// snapshot is an error naming the problem, never an over-committed state or an abort.
#include "gpufleet/io/snapshot.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/io/strict_json.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::CheckedCluster;
using test::IsError;
using test::IsOk;
using test::MakeAllocation;
using test::MakePod;

void BuildRichCluster(CheckedCluster& c) {
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"hgx","cpu":"128","memory":"1Ti","pods":64,"gpu_sharing":"whole",
          "labels":{"zone":"a","gpu":"h100"},
          "taints":[{"key":"dedicated","value":"ml","effect":"NoSchedule"}],
          "nvlink_groups":[[0,1],[2,3],[0,1,2,3]],
          "devices":[
            {"type":"gpu","minor":0,"id":"GPU-0","model":"H100","memory":"80Gi",
             "topology":{"socketID":0,"nodeID":0,"pcieID":"p0","busID":"0000:18:00.0"}},
            {"type":"gpu","minor":1,"id":"GPU-1","model":"H100","memory":"80Gi",
             "topology":{"socketID":0,"nodeID":0,"pcieID":"p0","busID":"0000:2a:00.0"}},
            {"type":"gpu","minor":2,"id":"GPU-2","model":"H100","memory":"80Gi","health":false},
            {"type":"gpu","minor":3,"id":"GPU-3","model":"H100","memory":"80Gi"},
            {"type":"rdma","minor":0,"id":"mlx5_0","topology":{"pcieID":"p0"}}]})"));
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"share","cpu":"1500m","memory":"64Gi","gpu_sharing":"shared",
          "gpus":{"count":2,"model":"V100M16","memory":"16276Mi"}})"));
  ASSERT_OK(c.AddNodeJson(R"({"name":"cpu","cpu":"8","memory":"32Gi"})"));
  ASSERT_TRUE(
      c.Place(MakePod(R"({"name":"w","tolerations":[{"operator":"Exists"}],
                         "requests":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":"2","koordinator.sh/rdma":"50"}})"))
          .ok());
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"s","requests":{"aliyun.com/gpu-mem":"8138"}})"),
                      "binpack", /*commit=*/false)
                  .ok());
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"c","requests":{"cpu":"500m","memory":"1Gi"}})")).ok());
  ASSERT_OK(c.SetDeviceHealth("share", "gpu", 1, false));
}

TEST(SnapshotTest, RoundTripGivesAnEqualStateAndIdenticalText) {
  CheckedCluster c;
  BuildRichCluster(c);
  ASSERT_EQ(c.state().num_allocations(), 3);
  const std::string text = SaveSnapshot(c.state());
  absl::StatusOr<ClusterState> loaded = LoadSnapshot(text);
  ASSERT_TRUE(IsOk(loaded));
  EXPECT_OK(loaded->CheckInvariants());
  EXPECT_TRUE(*loaded == c.state());
  EXPECT_EQ(SaveSnapshot(*loaded), text);
  EXPECT_EQ(loaded->FindAllocation("s")->state, AllocationState::kReserved);
  EXPECT_EQ(loaded->FindAllocation("w")->state, AllocationState::kBound);
  EXPECT_FALSE(loaded->node(1).devices[1].healthy);
  EXPECT_EQ(loaded->node(0).devices[4].topology.pcie_switch, "p0");
  EXPECT_EQ(loaded->node(1).cpu_milli, 1500);
  EXPECT_EQ(loaded->usage(0).gpu_count, 3);
}

TEST(SnapshotTest, EmptyStateRoundTrips) {
  ClusterState empty;
  auto loaded = LoadSnapshot(SaveSnapshot(empty));
  ASSERT_TRUE(IsOk(loaded));
  EXPECT_TRUE(*loaded == empty);
  EXPECT_EQ(loaded->num_nodes(), 0);
}

TEST(SnapshotTest, LoadedStateKeepsWorking) {
  CheckedCluster c;
  BuildRichCluster(c);
  auto loaded = LoadSnapshot(SaveSnapshot(c.state()));
  ASSERT_TRUE(IsOk(loaded));
  ASSERT_OK(loaded->Commit("s"));
  ASSERT_OK(loaded->Release("w"));
  EXPECT_OK(loaded->CheckInvariants());
  EXPECT_FALSE(*loaded == c.state());
}

TEST(SnapshotTest, CorruptSnapshotsAreErrors) {
  CheckedCluster c;
  BuildRichCluster(c);
  Json good = Json::parse(SaveSnapshot(c.state()));
  auto with = [&](const std::function<void(Json&)>& edit) {
    Json j = good;
    edit(j);
    return j.dump();
  };
  struct Case {
    std::string name;
    std::string text;
    absl::StatusCode code;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {"not JSON", "{\"version\":", absl::StatusCode::kInvalidArgument, {"snapshot: not JSON"}},
      {"array", "[]", absl::StatusCode::kInvalidArgument, {"snapshot: not a JSON object"}},
      {"no version", "{}", absl::StatusCode::kInvalidArgument, {"unsupported version"}},
      {"version 2", with([](Json& j) { j["version"] = 2; }), absl::StatusCode::kInvalidArgument,
       {"unsupported version"}},
      {"version as text", with([](Json& j) { j["version"] = "1"; }),
       absl::StatusCode::kInvalidArgument, {"version"}},
      {"bad node", with([](Json& j) { j["nodes"][1]["cpu"] = "lots"; }),
       absl::StatusCode::kInvalidArgument, {"node share", "cpu", "\"lots\""}},
      {"node not an object", with([](Json& j) { j["nodes"] = "x"; }),
       absl::StatusCode::kInvalidArgument, {"node"}},
      {"duplicate node", with([](Json& j) { j["nodes"].push_back(j["nodes"][0]); }),
       absl::StatusCode::kAlreadyExists, {"node hgx already exists"}},
      {"over-commit", with([](Json& j) { j["allocations"][2]["devices"][0]["core"] = 101; }),
       absl::StatusCode::kFailedPrecondition, {"over-commit"}},
      {"unknown node", with([](Json& j) { j["allocations"][0]["node"] = "gone"; }),
       absl::StatusCode::kNotFound, {"node gone"}},
      {"missing field", with([](Json& j) { j["allocations"][0].erase("cpu_milli"); }),
       absl::StatusCode::kInvalidArgument, {"malformed allocation"}},
      {"wrong type", with([](Json& j) { j["allocations"][2]["devices"][0]["minor"] = "0"; }),
       absl::StatusCode::kInvalidArgument, {"malformed allocation"}},
      {"minor wraps", with([](Json& j) { j["allocations"][2]["devices"][0]["minor"] = 4294967296; }),
       absl::StatusCode::kInvalidArgument, {"allocation w", "minor 4294967296 is out of range"}},
      {"allocations not a list", with([](Json& j) { j["allocations"] = 5; }),
       absl::StatusCode::kInvalidArgument, {"malformed allocation"}},
      {"unknown state", with([](Json& j) { j["allocations"][0]["state"] = "Running"; }),
       absl::StatusCode::kInvalidArgument, {"state", "Running"}},
      {"duplicate pod", with([](Json& j) { j["allocations"].push_back(j["allocations"][0]); }),
       absl::StatusCode::kAlreadyExists, {"already holds"}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    EXPECT_TRUE(IsError(LoadSnapshot(k.text), k.code, k.parts));
  }
}

// Snapshots and scenario files share NodeFromJson; integers that JSON would silently convert
// (a minor of 2^32 becoming 0) are errors naming the node and field.
TEST(SnapshotTest, NodeJsonRejectsIntegersThatWouldWrap) {
  struct Case {
    const char* json;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {R"({"name":"n","devices":[{"minor":4294967296,"memory":"16Gi"}]})",
       {"node n devices[0]", "minor", "expected an integer, got 4294967296"}},
      {R"({"name":"n","devices":[{"minor":1.5,"memory":"16Gi"}]})",
       {"node n devices[0]", "minor", "expected an integer"}},
      {R"({"name":"n","devices":[{"minor":0,"memory":"16Gi","topology":{"nodeID":"0"}}]})",
       {"topology", "nodeID"}},
      {R"({"name":"n","gpus":{"count":-1,"memory":"16Gi"}})", {"node n gpus", "count", "negative"}},
      {R"({"name":"n","gpus":{"count":2}})", {"node n", "gpu 0", "memory must be given"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_TRUE(IsError(NodeFromJson(Json::parse(c.json)), absl::StatusCode::kInvalidArgument,
                        c.parts));
  }
  Json good = Json::parse(SaveSnapshot(ClusterState()));
  good["nodes"] = Json::array({Json::parse(cases[0].json)});
  EXPECT_TRUE(IsError(LoadSnapshot(good.dump()), absl::StatusCode::kInvalidArgument,
                      {"minor", "4294967296"}));
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

absl::Status AddJson(CheckedCluster& c, const std::string& json) {
  auto parsed = ParseJsonText(json, "node spec");
  if (!parsed.ok()) return parsed.status();
  auto node = NodeFromJson(*parsed);
  if (!node.ok()) return node.status();
  return c.AddNode(*node);
}

// Every malformed node spec is refused with a message naming the node and the field, and the
// cluster stays equal to what it was.
TEST(NodeSpecStrictTest, BadNodesAreRefusedAndChangeNothing) {
  struct Case {
    const char* name;
    std::string json;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {"misspelt field", R"({"name":"n","gpu":{"count":1,"memory":"16Gi"}})",
       {"node n: unknown field \"gpu\"; did you mean \"gpus\"?"}},
      {"misspelt device field", R"({"name":"n","devices":[{"type":"gpu","memroy":"16Gi"}]})",
       {"node n devices[0]: unknown field \"memroy\"; did you mean \"memory\"?"}},
      {"misspelt topology field",
       R"({"name":"n","devices":[{"memory":"16Gi","topology":{"numaID":0}}]})",
       {"node n devices[0] topology: unknown field \"numaID\""}},
      {"misspelt gpus field", R"({"name":"n","gpus":{"count":1,"memroy":"16Gi"}})",
       {"node n gpus: unknown field \"memroy\"; did you mean \"memory\"?"}},
      {"misspelt taint field", R"({"name":"n","taints":[{"key":"k","efect":"NoSchedule"}]})",
       {"node n taints[0]: unknown field \"efect\"; did you mean \"effect\"?"}},
      {"unknown taint effect", R"({"name":"n","taints":[{"key":"k","effect":"NoScheduel"}]})",
       {"node n", "taints[0] (k): effect \"NoScheduel\" is not one of NoSchedule"}},
      {"duplicate minor",
       R"({"name":"n","devices":[{"minor":0,"memory":"16Gi"},{"minor":0,"memory":"16Gi"}]})",
       {"node n: duplicate gpu device minor 0"}},
      {"duplicate uuid",
       R"({"name":"n","devices":[{"minor":0,"id":"GPU-a","memory":"16Gi"},
                                   {"minor":1,"id":"GPU-a","memory":"16Gi"}]})",
       {"node n: gpu 1: device id \"GPU-a\" is used by another device"}},
      {"crossing NVLink groups",
       R"({"name":"n","gpus":{"count":4,"memory":"16Gi"},"nvlink_groups":[[0,1],[1,2]]})",
       {"node n: nvlink_groups[1] overlaps nvlink_groups[0] without one containing the other"}},
      {"repeated NVLink group",
       R"({"name":"n","gpus":{"count":4,"memory":"16Gi"},"nvlink_groups":[[0,1],[1,0]]})",
       {"node n: nvlink_groups[1] repeats nvlink_groups[0]"}},
      {"fractional NVLink minor",
       R"({"name":"n","gpus":{"count":4,"memory":"16Gi"},"nvlink_groups":[[0,1.5]]})",
       {"node n: nvlink_groups: expected a list of lists of GPU minors"}},
      {"ten million GPUs", R"({"name":"n","gpus":{"count":10000000,"memory":"16Gi"}})",
       {"node n gpus: count", "10000000 GPUs", "more than the 1024 devices a node may have"}},
      {"1025 devices", absl::StrCat(R"({"name":"n","devices":[)",
                                    [] {
                                      std::string d;
                                      for (int i = 0; i <= kMaxDevicesPerNode; ++i)
                                        absl::StrAppend(&d, i ? "," : "",
                                                        R"({"type":"rdma","minor":)", i, "}");
                                      return d;
                                    }(),
                                    "]}"),
       {"node n: devices", "1025 devices is more than the 1024"}},
      {"fractional pods", R"({"name":"n","pods":"1.5"})",
       {"node n: pods: invalid quantity \"1.5\": pods takes whole numbers only"}},
      {"fractional device memory", R"({"name":"n","devices":[{"memory":"0.5"}]})",
       {"node n devices[0]", "koordinator.sh/gpu-memory", "\"0.5\"", "whole numbers only"}},
      {"too much cpu", R"({"name":"n","cpu":"2e12"})",
       {"node n: cpu:", "is more than the", "cores a node may have"}},
      {"negative memory", R"({"name":"n","memory":"-5Gi"})",
       {"node n: memory: invalid quantity \"-5Gi\": negative"}},
      {"whitespace in a quantity", R"({"name":"n","memory":" 5Gi"})",
       {"node n: memory: invalid quantity \" 5Gi\": whitespace is not allowed"}},
      {"overflowing quantity", R"({"name":"n","memory":"1e100"})",
       {"node n: memory: invalid quantity \"1e100\": too large"}},
      {"device ratio not 100",
       R"({"name":"n","devices":[{"memory":"16Gi","resources":{"koordinator.sh/gpu-memory-ratio":"50"}}]})",
       {"node n devices[0] resources: koordinator.sh/gpu-memory-ratio", "got 50"}},
      {"duplicate key", R"({"name":"n","cpu":"1","cpu":"2"})", {"node spec: duplicate key \"cpu\""}},
      {"NaN", R"({"name":"n","cpu":NaN})", {"node spec: not JSON"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CheckedCluster cluster;
    ASSERT_OK(cluster.AddNodeJson(R"({"name":"before","gpus":{"count":2,"memory":"16Gi"}})"));
    const ClusterState before = cluster.state();
    EXPECT_TRUE(IsError(AddJson(cluster, c.json), absl::StatusCode::kInvalidArgument, c.parts));
    EXPECT_EQ(cluster.state(), before);
  }
  // Nested NVLink groups (pairs inside the board) and 1024 devices stay valid.
  CheckedCluster ok;
  EXPECT_OK(AddJson(ok, R"({"name":"hgx","gpus":{"count":4,"memory":"80Gi"},
                            "nvlink_groups":[[0,1],[2,3],[0,1,2,3]]})"));
  EXPECT_OK(AddJson(ok, R"({"name":"big","gpus":{"count":1024,"memory":"16Gi"}})"));
}

TEST(PodSpecStrictTest, BadPodsNameTheField) {
  struct Case {
    const char* json;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {R"({"name":"p","requets":{"cpu":"1"}})", {"pod p: unknown field \"requets\"; did you mean \"requests\"?"}},
      {R"({"name":"p","tolerations":[{"key":"k","operater":"Exists"}]})",
       {"pod p tolerations[0]: unknown field \"operater\"; did you mean \"operator\"?"}},
      {R"({"name":"p","tolerations":[{"key":"k","effect":"Never"}]})",
       {"pod p tolerations[0]: effect: \"Never\" is not one of"}},
      {R"({"name":"p","requests":{"nvidia.com/gpu":"1.5"}})",
       {"pod p: request nvidia.com/gpu: invalid quantity \"1.5\": nvidia.com/gpu takes whole numbers only"}},
      {R"({"name":"p","requests":{"nvidia.com/gpu":1.5}})", {"pod p", "nvidia.com/gpu", "whole numbers"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_TRUE(IsError(PodFromJson(Json::parse(c.json)), absl::StatusCode::kInvalidArgument, c.parts));
  }
}

TEST(StrictJsonTest, RefusesDuplicatesDeepNestingAndJunkOnOneLine) {
  EXPECT_TRUE(IsError(ParseJsonText(R"({"a":{"b":1,"b":2}})", "f.json"),
                      absl::StatusCode::kInvalidArgument, {"f.json: duplicate key \"b\""}));
  // The same key in two different objects is fine.
  EXPECT_OK(ParseJsonText(R"({"a":{"b":1},"c":{"b":2},"d":[{"b":1},{"b":2}]})", "f.json"));
  std::string deep(10000, '[');
  deep += std::string(10000, ']');
  EXPECT_TRUE(IsError(ParseJsonText(deep, "f.json"), absl::StatusCode::kOutOfRange,
                      {"f.json: nested deeper than 64 levels"}));
  for (absl::string_view junk : {absl::string_view("{\"a\": NaN}"), absl::string_view("Infinity"),
                                 absl::string_view("\x7f" "ELF\x02\x01\x01\0\0", 9),
                                 absl::string_view("{\"a\": \"\xff\xfe\"}"), absl::string_view("")}) {
    auto parsed = ParseJsonText(junk, "f.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_TRUE(absl::StartsWith(parsed.status().message(), "f.json: not JSON")) << parsed.status();
    EXPECT_EQ(parsed.status().message().find('\n'), absl::string_view::npos);
    EXPECT_EQ(parsed.status().message().find('\0'), absl::string_view::npos);
  }
  EXPECT_TRUE(IsError(LoadSnapshot(R"({"version":1,"version":1})"),
                      absl::StatusCode::kInvalidArgument, {"snapshot: duplicate key \"version\""}));
  EXPECT_TRUE(IsError(LoadSnapshot(R"({"version":1,"node":[]})"), absl::StatusCode::kInvalidArgument,
                      {"snapshot: unknown field \"node\"; did you mean \"nodes\"?"}));
}

TEST(StrictJsonTest, DidYouMeanOnlyForNearMisses) {
  EXPECT_EQ(DidYouMean("requets", {"name", "requests"}), "; did you mean \"requests\"?");
  EXPECT_EQ(DidYouMean("zzz", {"name", "requests"}), "; known: name, requests");
}

}  // namespace
}  // namespace gpufleet
