// Restoring a bound pod from its annotations (Koordinator's device-allocated JSON, gpushare's
// ALIYUN_COM_GPU_MEM_* keys) against a small fixed cluster that already holds one pod. Input:
// "key=value" lines, the annotations, plus "@pod=<name>" (whole, half, share, rdma, cpu, held,
// joint: GPUs with RDMA virtual functions on node "v"),
// "@node=<name>" and "@unit=gib". A restore either fails and leaves the cluster exactly as it was,
// or books a bound allocation that keeps the accounting consistent and whose annotations, written
// again, read back to the same grants.
#include <cstdint>
#include <memory>

#include "fuzz_util.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/io/spec_json.h"

namespace gpufleet {
namespace {

Node NodeOf(const char* json) { return *NodeFromJson(Json::parse(json)); }

Pod PodOf(const char* json) { return *PodFromJson(Json::parse(json)); }

struct Fixture {
  ClusterState state;
  std::map<std::string, Pod> pods;
};

const Fixture& Cluster() {
  static const Fixture* fixture = [] {
    auto* f = new Fixture;
    f->state.set_clock([] { return int64_t{1}; });
    (void)f->state.AddNode(NodeOf(R"({"name":"n","cpu":"16","memory":"64Gi","devices":[
        {"type":"gpu","minor":0,"model":"H100","memory":"80Gi"},
        {"type":"gpu","minor":1,"model":"H100","memory":"80Gi"},
        {"type":"rdma","minor":0}]})"));
    (void)f->state.AddNode(
        NodeOf(R"({"name":"g","cpu":"8","memory":"32Gi","gpus":{"count":2,"memory":"16276Mi"}})"));
    // RDMA NICs with SR-IOV VFs, one per PCIe switch of a GPU.
    (void)f->state.AddNode(NodeOf(R"({"name":"v","cpu":"16","memory":"64Gi","devices":[
        {"type":"gpu","minor":0,"memory":"80Gi","topology":{"pcieID":"sw0"}},
        {"type":"gpu","minor":1,"memory":"80Gi","topology":{"pcieID":"sw1"}},
        {"type":"rdma","minor":0,"topology":{"pcieID":"sw0"},"vfGroups":[{"vfs":[
          {"minor":0,"busID":"0000:1f:00.2"},{"minor":1,"busID":"0000:1f:00.3"}]}]},
        {"type":"rdma","minor":1,"topology":{"pcieID":"sw1"},"vfGroups":[{"vfs":[
          {"minor":0,"busID":"0000:2f:00.2"}]}]}]})"));
    for (const char* json : {
             R"({"name":"whole","requests":{"cpu":"1","nvidia.com/gpu":"1"}})",
             R"({"name":"half","requests":{"koordinator.sh/gpu":"50"}})",
             R"({"name":"share","requests":{"aliyun.com/gpu-mem":"8000"}})",
             R"({"name":"rdma","requests":{"koordinator.sh/rdma":"50"}})",
             R"({"name":"cpu","requests":{"cpu":"2","memory":"1Gi"}})",
             R"({"name":"held","requests":{"koordinator.sh/gpu":"50"}})",
             R"({"name":"joint","requests":{"nvidia.com/gpu":"2","koordinator.sh/rdma":"1"}})"}) {
      Pod p = PodOf(json);
      f->pods[p.name] = p;
    }
    Allocation held;
    held.pod = "held";
    held.node = "n";
    held.devices.push_back(DeviceGrant{"gpu", 0, 50, int64_t{40} << 30});
    (void)f->state.Reserve(held);
    (void)f->state.Commit("held");
    if (!f->state.CheckInvariants().ok()) std::abort();
    return f;
  }();
  return *fixture;
}

}  // namespace
}  // namespace gpufleet

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const Fixture& fixture = Cluster();
  std::map<std::string, std::string> annotations = fuzz::KeyValueLines(fuzz::AsText(data, size));
  auto take = [&](const std::string& key, const std::string& fallback) {
    auto it = annotations.find(key);
    if (it == annotations.end()) return fallback;
    std::string v = it->second;
    annotations.erase(it);
    return v;
  };
  const std::string pod_name = take("@pod", "half");
  const std::string node = take("@node", "n");
  const int64_t unit = take("@unit", "mib") == "gib" ? int64_t{1} << 30 : int64_t{1} << 20;
  auto pod_it = fixture.pods.find(pod_name);
  if (pod_it == fixture.pods.end()) return 0;
  const Pod& pod = pod_it->second;

  ClusterState state = fixture.state;
  absl::StatusOr<Allocation> restored = RestoreBoundPod(state, pod, node, annotations, unit);
  if (!restored.ok()) {
    FUZZ_CHECK(fuzz::IsUserError(restored.status()) && !restored.status().message().empty(),
               "%s", restored.status().ToString().c_str());
    FUZZ_CHECK(state == fixture.state, "a failed restore changed the cluster: %s",
               restored.status().ToString().c_str());
    return 0;
  }
  absl::Status consistent = state.CheckInvariants();
  FUZZ_CHECK(consistent.ok(), "%s", consistent.ToString().c_str());
  const Allocation* booked = state.FindAllocation(pod.name);
  FUZZ_CHECK(booked != nullptr && *booked == *restored, "the returned allocation is not booked");
  FUZZ_CHECK(booked->state == AllocationState::kBound, "restored allocation is not bound");

  // What the scheduler would write for this allocation reads back to the same grants.
  const Node& n = state.node(state.FindNode(node));
  const auto written = AllocationAnnotations(*restored, n, /*gpushare=*/false, unit);
  absl::StatusOr<std::vector<DeviceGrant>> grants = GrantsFromAnnotations(written, n, pod, unit);
  FUZZ_CHECK(grants.ok(), "written annotations do not read back: %s\n  %s",
             grants.status().ToString().c_str(), written.begin()->second.c_str());
  FUZZ_CHECK(*grants == restored->devices, "grants changed on a round trip: %s",
             written.begin()->second.c_str());

  // Releasing the restored pod gives back exactly what it took.
  FUZZ_CHECK(state.Release(pod.name).ok(), "release failed");
  FUZZ_CHECK(state == fixture.state, "restore then release changed the cluster");
  return 0;
}
