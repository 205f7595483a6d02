// RDMA NICs with SR-IOV virtual functions: node specs, joint GPU+RDMA allocation (one VF on the
// NIC of each PCIe switch the GPUs span), exhaustion, release, annotations and snapshots.
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/core/rdma_vf.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/io/snapshot.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::CheckedCluster;
using test::IsError;
using test::MakeNode;
using test::MakePod;

// 8 GPUs on 4 PCIe switches (2 each) across 2 NUMA nodes, one RDMA NIC per switch with
// `vfs_per_nic` VFs. NIC k has minor k and VF bus ids "0000:k<j>:00.<j>".
std::string EightGpuNode(const std::string& name, int vfs_per_nic, bool topology = true) {
  std::string devices;
  auto topo = [&](int sw) {
    if (!topology) return std::string();
    return absl::StrFormat(R"(,"topology":{"socketID":%d,"nodeID":%d,"pcieID":"sw%d"})", sw / 2,
                           sw / 2, sw);
  };
  for (int g = 0; g < 8; ++g)
    devices += absl::StrFormat(R"({"type":"gpu","minor":%d,"model":"A100","memory":"80Gi"%s},)",
                               g, topo(g / 2));
  for (int k = 0; k < 4; ++k) {
    std::string vfs;
    for (int j = 0; j < vfs_per_nic; ++j)
      vfs += absl::StrFormat(R"(%s{"minor":%d,"busID":"0000:%d%d:00.%d"})", j ? "," : "", j, k, j,
                             j);
    devices += absl::StrFormat(
        R"({"type":"rdma","minor":%d%s,"vfGroups":[{"labels":{"type":"general"},"vfs":[%s]}]}%s)",
        k, topo(k), vfs, k < 3 ? "," : "");
  }
  return absl::StrFormat(R"({"name":"%s","cpu":"64","memory":"512Gi","devices":[%s]})", name,
                         devices);
}

Pod JointPod(const std::string& name, int gpus) {
  return MakePod(absl::StrFormat(
      R"({"name":"%s","requests":{"nvidia.com/gpu":"%d","koordinator.sh/rdma":"1"}})", name, gpus));
}

// PCIe switch of each granted device of `type`.
std::set<std::string> Switches(const ClusterState& s, const Allocation& a, const std::string& type) {
  const Node& n = s.node(s.FindNode(a.node));
  std::set<std::string> out;
  for (const DeviceGrant& g : a.devices)
    if (g.type == type)
      for (const Device& d : n.devices)
        if (d.type == type && d.minor == g.minor) out.insert(d.topology.pcie_switch);
  return out;
}

// Every VF held by any allocation, as "nic/busID"; fails the test on a VF held twice.
std::set<std::string> HeldVfs(const ClusterState& s) {
  std::set<std::string> held;
  for (const Allocation* a : s.Allocations())
    for (const DeviceGrant& g : a->devices)
      for (const VirtualFunction& vf : g.vfs)
        EXPECT_TRUE(held.insert(a->node + "/" + std::to_string(g.minor) + "/" + vf.bus_id).second)
            << vf.bus_id << " held twice";
  return held;
}

TEST(RdmaVfSpecTest, VfGroupsParseAndWriteBack) {
  Node n = MakeNode(EightGpuNode("n", 3));
  int nics = 0;
  for (const Device& d : n.devices) {
    if (d.type != kRdma) continue;
    ++nics;
    ASSERT_EQ(d.vf_groups.size(), 1u);
    EXPECT_EQ(d.vf_groups[0].labels.at("type"), "general");
    EXPECT_EQ(VfCount(d), 3);
    EXPECT_EQ(VfAt(d, 2).minor, 2);
  }
  EXPECT_EQ(nics, 4);
  auto again = NodeFromJson(NodeToJson(n));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, n);
}

TEST(RdmaVfSpecTest, BadVfsAreErrorsNamingNodeDeviceAndField) {
  auto node = [](const std::string& device) {
    return NodeFromJson(test::ParseJsonOrFail(
        R"({"name":"n1","cpu":"8","memory":"8Gi","devices":[)" + device + "]}"));
  };
  EXPECT_TRUE(IsError(
      node(R"({"type":"rdma","minor":2,"vfGroups":[{"vfs":[{"minor":1,"busID":"a"},{"minor":1,"busID":"b"}]}]})"),
      absl::StatusCode::kInvalidArgument, {"node n1", "rdma 2", "vfGroups[0].vfs[1].minor"}));
  EXPECT_TRUE(IsError(
      node(R"({"type":"rdma","minor":2,"vfGroups":[{"vfs":[{"minor":1,"busID":"a"}]},{"vfs":[{"minor":2,"busID":"a"}]}]})"),
      absl::StatusCode::kInvalidArgument, {"node n1", "rdma 2", "vfGroups[1].vfs[0].busID", "\"a\""}));
  EXPECT_TRUE(IsError(
      node(R"({"type":"gpu","minor":0,"memory":"16Gi","vfGroups":[{"vfs":[{"minor":0,"busID":"a"}]}]})"),
      absl::StatusCode::kInvalidArgument, {"node n1", "gpu 0", "vfGroups", "only rdma"}));
  EXPECT_TRUE(IsError(node(R"({"type":"rdma","minor":0,"vfGroups":[{"vfs":[{"minor":"x","busID":"a"}]}]})"),
                      absl::StatusCode::kInvalidArgument, {"n1", "devices[0]", "vfs[0]", "minor"}));
  EXPECT_TRUE(IsError(node(R"({"type":"rdma","minor":0,"vfGroups":[{"vfs":[{"minor":0}]}]})"),
                      absl::StatusCode::kInvalidArgument, {"n1", "devices[0]", "busID", "missing"}));
  EXPECT_TRUE(IsError(node(R"({"type":"rdma","minor":0,"vfGroups":[{"vfz":[]}]})"),
                      absl::StatusCode::kInvalidArgument, {"n1", "vfz"}));
  EXPECT_TRUE(IsError(node(R"({"type":"rdma","minor":0,"vfGroups":{"vfs":[]}})"),
                      absl::StatusCode::kInvalidArgument, {"n1", "vfGroups", "expected a list"}));
  // A node built in code goes through the same check when added, and nothing changes.
  CheckedCluster c;
  Node bad = MakeNode(EightGpuNode("n2", 2));
  bad.devices.back().vf_groups[0].vfs[1].bus_id = bad.devices.back().vf_groups[0].vfs[0].bus_id;
  const ClusterState before = c.state();
  EXPECT_TRUE(IsError(c.AddNode(bad), absl::StatusCode::kInvalidArgument, {"node n2", "rdma 3", "busID"}));
  EXPECT_EQ(c.state(), before);
}

TEST(RdmaVfPlacementTest, FourGpusOnTwoSwitchesGetOneVfOnEachSwitchNic) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 3)));
  Placement r = c.Place(JointPod("p", 4));
  ASSERT_TRUE(r.ok()) << r.reason;
  const Allocation& a = r.allocation;
  const std::set<std::string> gpu_switches = Switches(c.state(), a, kGpu);
  EXPECT_EQ(gpu_switches.size(), 2u);
  EXPECT_EQ(Switches(c.state(), a, kRdma), gpu_switches);
  int nics = 0;
  for (const DeviceGrant& g : a.devices) {
    if (g.type != kRdma) continue;
    ++nics;
    ASSERT_EQ(g.vfs.size(), 1u);
    EXPECT_EQ(g.vfs[0].minor, 0);  // the lowest bus id of a fresh NIC
    EXPECT_EQ(g.core, 1);
  }
  EXPECT_EQ(nics, 2);
  EXPECT_EQ(HeldVfs(c.state()).size(), 2u);
  // The next pod on the same NICs gets the next VF, never the same one.
  Placement r2 = c.Place(JointPod("q", 4));
  ASSERT_TRUE(r2.ok()) << r2.reason;
  EXPECT_EQ(HeldVfs(c.state()).size(), 4u);
}

TEST(RdmaVfPlacementTest, ExhaustedVfsMakeTheNodeInfeasibleAndReleaseFreesThem) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 1)));
  // One VF per switch: four one-GPU pods take one GPU on each switch.
  std::set<std::string> switches;
  for (int k = 0; k < 4; ++k) {
    Placement r = c.Place(JointPod("p" + std::to_string(k), 1));
    ASSERT_TRUE(r.ok()) << r.reason;
    const auto s = Switches(c.state(), r.allocation, kGpu);
    EXPECT_EQ(Switches(c.state(), r.allocation, kRdma), s);
    switches.insert(s.begin(), s.end());
  }
  EXPECT_EQ(switches.size(), 4u);
  EXPECT_EQ(HeldVfs(c.state()).size(), 4u);
  // Four GPUs are still free, but no switch has a free VF.
  Pod next = JointPod("x", 1);
  FitResult f = c.Filter(next, "n");
  EXPECT_EQ(f.code, FitCode::kUnschedulable);
  EXPECT_NE(f.reason.find("Insufficient rdma virtual functions"), std::string::npos) << f.reason;
  const ClusterState before = c.state();
  Placement none = c.Place(next);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.reason.find("0/1 nodes are available: 1 Insufficient rdma virtual functions"),
            std::string::npos)
      << none.reason;
  EXPECT_EQ(c.state(), before);
  // An RDMA-only pod needs a VF too.
  EXPECT_EQ(c.Filter(MakePod(R"({"name":"r","requests":{"koordinator.sh/rdma":"1"}})"), "n").reason,
            "Insufficient rdma virtual functions");
  // Releasing a pod frees its VF, and the waiting pod lands on that switch.
  const std::set<std::string> freed =
      Switches(c.state(), *c.state().FindAllocation("p2"), kRdma);
  ASSERT_OK(c.Release("p2"));
  EXPECT_TRUE(c.Filter(next, "n").ok());
  Placement r = c.Place(next);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(Switches(c.state(), r.allocation, kRdma), freed);
}

TEST(RdmaVfPlacementTest, RdmaOnlyPodGetsOneVfOnAnyNic) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 2)));
  for (int k = 0; k < 8; ++k) {
    Placement r = c.Place(MakePod(absl::StrFormat(
        R"({"name":"r%d","requests":{"koordinator.sh/rdma":"1"}})", k)));
    ASSERT_TRUE(r.ok()) << r.reason;
    ASSERT_EQ(r.allocation.devices.size(), 1u);
    EXPECT_EQ(r.allocation.devices[0].vfs.size(), 1u);
  }
  EXPECT_EQ(HeldVfs(c.state()).size(), 8u);
  Placement full = c.Place(MakePod(R"({"name":"r9","requests":{"koordinator.sh/rdma":"1"}})"));
  EXPECT_FALSE(full.ok());
  EXPECT_NE(full.reason.find("Insufficient rdma virtual functions"), std::string::npos)
      << full.reason;
}

TEST(RdmaVfPlacementTest, JointRequestWithoutTopologyIsAClearError) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 2, /*topology=*/false)));
  FitResult f = c.Filter(JointPod("p", 2), "n");
  EXPECT_EQ(f.code, FitCode::kUnschedulableAndUnresolvable);
  EXPECT_NE(f.reason.find("PCIe switch (topology.pcieID)"), std::string::npos) << f.reason;
  EXPECT_NE(f.reason.find("gpu 0 has none"), std::string::npos) << f.reason;
  Placement r = c.Place(JointPod("p", 2));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.reason.find("topology.pcieID"), std::string::npos) << r.reason;
  // RDMA-only pods need no topology.
  EXPECT_TRUE(c.Filter(MakePod(R"({"name":"r","requests":{"koordinator.sh/rdma":"1"}})"), "n").ok());
}

TEST(RdmaVfPlacementTest, ScopeAndNvlinkStillApplyToTheGpus) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 2)));
  Pod p = JointPod("p", 2);
  p.scope = TopologyScope::kPcie;
  Placement r = c.Place(p);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(Switches(c.state(), r.allocation, kGpu).size(), 1u);
  EXPECT_EQ(Switches(c.state(), r.allocation, kRdma), Switches(c.state(), r.allocation, kGpu));
}

TEST(RdmaVfAccountingTest, ReserveRefusesAVfHeldOrUnknownAndLeavesStateUnchanged) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 2)));
  Allocation a;
  a.pod = "a";
  a.node = "n";
  a.devices.push_back(DeviceGrant{kRdma, 1, 1, 0, {{0, "0000:10:00.0"}}});
  ASSERT_OK(c.Reserve(a));
  const ClusterState before = c.state();
  Allocation b = a;
  b.pod = "b";
  EXPECT_TRUE(IsError(c.Reserve(b), absl::StatusCode::kFailedPrecondition,
                      {"0000:10:00.0", "held by another pod"}));
  b.devices[0].vfs = {{1, "0000:10:00.0"}};  // minor and bus id of different VFs
  EXPECT_TRUE(IsError(c.Reserve(b), absl::StatusCode::kNotFound, {"rdma 1", "minor 1"}));
  b.devices[0].vfs = {{1, "0000:11:00.1"}, {1, "0000:11:00.1"}};
  EXPECT_TRUE(IsError(c.Reserve(b), absl::StatusCode::kInvalidArgument, {"twice"}));
  EXPECT_EQ(c.state(), before);
  ASSERT_OK(c.Unreserve("a"));
  b.devices[0].vfs = {{0, "0000:10:00.0"}};
  EXPECT_OK(c.Reserve(b));  // free again after the unreserve
}

// Random place/release histories: no VF is ever held twice, and the state's own record of held
// VFs always equals the allocations' (CheckInvariants after every step).
TEST(RdmaVfPropertyTest, NoVfIsGrantedTwice) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    CheckedCluster c;
    ASSERT_OK(c.AddNodeJson(EightGpuNode("n0", 2)));
    ASSERT_OK(c.AddNodeJson(EightGpuNode("n1", 3)));
    std::vector<std::string> live;
    for (int step = 0; step < 60; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        const size_t k = rng() % live.size();
        ASSERT_OK(c.Release(live[k]));
        live.erase(live.begin() + k);
        continue;
      }
      const std::string name = absl::StrFormat("p%d-%d", round, step);
      Pod p = rng() % 4 == 0
                  ? MakePod(absl::StrFormat(R"({"name":"%s","requests":{"koordinator.sh/rdma":"1"}})", name))
                  : JointPod(name, 1 + rng() % 4);
      const std::string strategy = rng() % 2 ? "binpack" : "spread";
      const std::vector<std::string> nodes = {"n0", "n1"};
      bool fits_somewhere = false;
      for (const auto& n : nodes) fits_somewhere |= c.Filter(p, n).ok();
      Placement r = c.Place(p, strategy);
      EXPECT_EQ(r.ok(), fits_somewhere) << r.reason;  // placement agrees with filter
      if (r.ok()) {
        live.push_back(name);
        if (p.Find(kGpu))
          EXPECT_EQ(Switches(c.state(), r.allocation, kRdma), Switches(c.state(), r.allocation, kGpu));
      }
      HeldVfs(c.state());
    }
  }
}

TEST(RdmaVfRecordTest, AnnotationsCarryTheVfsAndRestoreReservesExactlyThem) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 2)));
  Pod pod = JointPod("ns/p", 4);
  Placement r = c.Place(pod);
  ASSERT_TRUE(r.ok()) << r.reason;
  const Node& node = c.state().node(0);
  const auto annotations = AllocationAnnotations(r.allocation, node, /*gpushare=*/false);
  Json j = Json::parse(annotations.at(kDeviceAllocatedAnnotation));
  ASSERT_EQ(j["rdma"].size(), 2u);
  for (const Json& e : j["rdma"]) {
    ASSERT_TRUE(e.contains("extension")) << e.dump();
    ASSERT_EQ(e["extension"]["vfs"].size(), 1u);
    EXPECT_TRUE(e["extension"]["vfs"][0]["busID"].is_string());
    EXPECT_EQ(e["resources"]["koordinator.sh/rdma"], "1");
  }
  // Restart: a fresh state rebuilt from the annotation holds exactly those VFs.
  CheckedCluster fresh;
  ASSERT_OK(fresh.AddNode(node));
  auto restored = RestoreBoundPod(fresh.state(), pod, "n", annotations);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->devices, r.allocation.devices);
  EXPECT_EQ(fresh.state().vf_taken(), c.state().vf_taken());
  // The same VF cannot be restored for a second pod.
  Pod other = JointPod("ns/q", 4);
  const ClusterState before = fresh.state();
  Json clash = j;
  for (Json& e : clash["gpu"]) e["minor"] = e["minor"].get<int>() + 4;  // other GPUs, same VFs
  auto bad = RestoreBoundPod(fresh.state(), other, "n",
                             {{kDeviceAllocatedAnnotation, clash.dump()}});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(fresh.state(), before);
  // Records that disagree with the rule are refused, naming pod and key.
  Json no_vf = j;
  no_vf["rdma"][0].erase("extension");
  EXPECT_TRUE(IsError(RestoreBoundPod(fresh.state(), other, "n",
                                      {{kDeviceAllocatedAnnotation, no_vf.dump()}}),
                      absl::StatusCode::kInvalidArgument, {"pod ns/q", "virtual functions"}));
  Json malformed = j;
  malformed["rdma"][0]["extension"]["vfs"][0]["minor"] = "zero";
  EXPECT_TRUE(IsError(RestoreBoundPod(fresh.state(), other, "n",
                                      {{kDeviceAllocatedAnnotation, malformed.dump()}}),
                      absl::StatusCode::kInvalidArgument, {"pod ns/q", "extension", "vfs[0]"}));
  EXPECT_EQ(fresh.state(), before);
}

TEST(RdmaVfRecordTest, SnapshotRoundTripsHeldVfs) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(EightGpuNode("n", 2)));
  ASSERT_TRUE(c.Place(JointPod("p", 4)).ok());
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"r","requests":{"koordinator.sh/rdma":"1"}})")).ok());
  const std::string text = SaveSnapshot(c.state());
  auto loaded = LoadSnapshot(text);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, c.state());
  EXPECT_EQ(loaded->vf_taken(), c.state().vf_taken());
  EXPECT_EQ(SaveSnapshot(*loaded), text);
  // A snapshot naming one VF for two pods is refused.
  Json j = Json::parse(text);
  Json twin = j["allocations"][1];
  twin["pod"] = "twin";
  j["allocations"].push_back(twin);
  EXPECT_FALSE(LoadSnapshot(j.dump()).ok());
}

}  // namespace
}  // namespace gpufleet
