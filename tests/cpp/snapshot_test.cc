// The whole accounting as JSON: save -> load gives an equal state and the same text; a corrupt
// snapshot is an error naming the problem, never an over-committed state or an abort.
#include "gpufleet/io/snapshot.h"

#include <functional>
#include <string>
#include <vector>

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
          .placed);
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"s","requests":{"aliyun.com/gpu-mem":"8138"}})"),
                      "binpack", /*commit=*/false)
                  .placed);
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"c","requests":{"cpu":"500m","memory":"1Gi"}})")).placed);
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
