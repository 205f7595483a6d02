#include "gpufleet/accounting/device_fit.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/cluster_state.h"

namespace gpufleet {
namespace {

// Device types are short names ("gpu", "rdma") compared for every device of every node asked:
// inline, with no library call (std::string's == calls memcmp, which took about a quarter of an
// engine cycle without node classes).
inline bool SameType(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// A fixed-length comparison the compiler expands inline.
inline bool IsGpu(const std::string& type) { return std::string_view(type) == kGpu; }

inline bool ModelAllowed(const Pod& pod, const Device& d) {
  if (pod.gpu_models.empty() || !IsGpu(d.type)) return true;
  return std::find(pod.gpu_models.begin(), pod.gpu_models.end(), d.model) != pod.gpu_models.end();
}

// Whether device `d`, already known to be of the request's type and an allowed model, can take
// it now. `switches`, when given, limits GPUs to those PCIe switches (joint GPU+RDMA with VFs).
inline bool HasRoom(const NodeView& v, int d, const DeviceRequest& r,
                    const std::set<std::string>* switches) {
  const Device& dev = v.device(d);
  if (!dev.healthy) return false;
  if (v.has_vfs(d) && v.free_vfs(d) == 0) return false;
  if (switches && !switches->count(dev.topology.pcie_switch)) return false;
  if (r.whole()) return v.untouched(d);
  return v.free_core(d) >= r.core && v.free_memory(d) >= RequestBytesOn(r, dev);
}

bool DeviceFits(const NodeView& v, int d, const Pod& pod, const DeviceRequest& r,
                const std::set<std::string>* switches = nullptr) {
  const Device& dev = v.device(d);
  if (!SameType(dev.type, r.type) || !ModelAllowed(pod, dev)) return false;
  return HasRoom(v, d, r, switches);
}

std::string Plural(const std::string& type) { return type + " devices"; }

// The same words on every node, so "0/N nodes are available" can count them.
constexpr char kNoVfNearGpus[] =
    "Insufficient rdma virtual functions on the PCIe switches of fitting GPUs";

// Why fewer than `count` devices fit: the reasons the Kubernetes GPU-sharing schedulers use.
FitResult ShortageReason(const NodeView& v, const Pod& pod, const DeviceRequest& r) {
  if (r.count == 1 && !r.whole()) {
    bool core_ok_somewhere = false, memory_ok_somewhere = false;
    for (int d = 0; d < v.num_devices(); ++d) {
      const Device& dev = v.device(d);
      if (!SameType(dev.type, r.type) || !dev.healthy || !ModelAllowed(pod, dev)) continue;
      if (v.free_core(d) >= r.core) core_ok_somewhere = true;
      if (v.free_memory(d) >= RequestBytesOn(r, dev)) memory_ok_somewhere = true;
    }
    if (IsGpu(r.type) && core_ok_somewhere && !memory_ok_somewhere)
      return FitResult::Unschedulable("Insufficient GPU memory in one device");
    if (IsGpu(r.type) && memory_ok_somewhere && !core_ok_somewhere)
      return FitResult::Unschedulable("Insufficient GPU core in one device");
  }
  if (r.type == kRdma) {
    for (int d = 0; d < v.num_devices(); ++d)
      if (v.device(d).healthy && v.has_vfs(d) && v.free_vfs(d) == 0)
        return FitResult::Unschedulable("Insufficient rdma virtual functions");
  }
  return FitResult::Unschedulable("Insufficient " + Plural(r.type));
}

}  // namespace

bool NodeHasVfNics(const NodeView& v) { return v.vf_taken != nullptr; }

bool IsJointVfRequest(const NodeView& v, const Pod& pod) {
  return NodeHasVfNics(v) && pod.Find(kGpu) != nullptr && pod.Find(kRdma) != nullptr;
}

bool NicCanGiveVf(const NodeView& v, int d, const DeviceRequest& rdma) {
  const Device& dev = v.device(d);
  return dev.type == kRdma && dev.healthy && v.has_vfs(d) && v.free_vfs(d) > 0 &&
         (rdma.whole() ? v.untouched(d) : v.free_core(d) >= rdma.core);
}

FitResult VfSwitches(const NodeView& v, const Pod& pod, const DeviceRequest& rdma,
                     std::set<std::string>* switches) {
  if (rdma.count > 1)
    return FitResult::Unresolvable(absl::StrFormat(
        "a joint GPU+RDMA request gets one virtual function per PCIe switch of its GPUs; it "
        "cannot also ask for %d RDMA NICs (koordinator.sh/rdma at most 100)",
        rdma.count));
  for (int d = 0; d < v.num_devices(); ++d) {
    const Device& dev = v.device(d);
    const bool counts = dev.type == kGpu || (dev.type == kRdma && v.has_vfs(d));
    if (counts && dev.topology.pcie_switch.empty())
      return FitResult::Unresolvable(absl::StrFormat(
          "joint GPU+RDMA allocation needs the PCIe switch (topology.pcieID) of every GPU and "
          "RDMA NIC; %s %d has none",
          dev.type, dev.minor));
  }
  switches->clear();
  for (int d = 0; d < v.num_devices(); ++d)
    if (NicCanGiveVf(v, d, rdma)) switches->insert(v.device(d).topology.pcie_switch);
  return FitResult::Ok();
}

bool QuickMayFit(const Pod& pod, const DeviceRequest* gpu, const NodeUsage& u) {
  if (pod.cpu_milli > u.cpu_capacity - u.cpu_used) return false;
  if (pod.memory_bytes > u.memory_capacity - u.memory_used) return false;
  if (u.pods_used + 1 > u.max_pods) return false;
  if (gpu == nullptr) return true;
  if (gpu->whole()) return u.gpu_whole_free >= gpu->count;
  if (u.gpu_count < gpu->count || u.gpu_max_free_core < gpu->core) return false;
  return gpu->memory_ratio != 0 || u.gpu_max_free_memory >= gpu->memory_bytes;
}

bool QuickMayFit(const Pod& pod, const NodeUsage& u) {
  return QuickMayFit(pod, pod.Find(kGpu), u);
}

FitResult FitDeviceRequest(const NodeView& v, const Pod& pod, const DeviceRequest& r,
                           std::vector<std::vector<int>>* domains) {
  const Node& n = *v.node;
  const bool is_gpu = IsGpu(r.type);
  // Joint GPU+RDMA with VFs: the NICs follow the GPUs, so the GPUs carry the whole check. Asked
  // on nodes with VF NICs only (one pointer test elsewhere, and no set built or freed).
  std::optional<std::set<std::string>> vf_switches;
  const std::set<std::string>* switches = nullptr;
  if (NodeHasVfNics(v) && (is_gpu || r.type == kRdma) && IsJointVfRequest(v, pod)) {
    vf_switches.emplace();
    FitResult f = VfSwitches(v, pod, *pod.Find(kRdma), &*vf_switches);
    if (!f.ok()) return f;
    if (!is_gpu) {
      if (vf_switches->empty())
        return FitResult::Unschedulable("Insufficient rdma virtual functions");
      return FitResult::Ok();
    }
    switches = &*vf_switches;
  }
  const bool nvlink = is_gpu && r.count > 1 && !n.nvlink_groups.empty();
  const bool scoped = r.count > 1 && pod.scope != TopologyScope::kNone;
  // Only a plan (domains) or a constraint needs to know which devices fit, not just how many.
  const bool keep_candidates = nvlink || scoped || domains != nullptr;
  // One pass: devices of the type, of an allowed model, and with room now (the checks below
  // read these counts in the order their reasons take precedence).
  const bool any_model = pod.gpu_models.empty() || !is_gpu;
  int of_type = 0, allowed = 0, fitting = 0;
  std::vector<int> candidates;
  for (int d = 0; d < v.num_devices(); ++d) {
    const Device& dev = v.device(d);
    if (!SameType(dev.type, r.type)) continue;
    ++of_type;
    if (!any_model && !ModelAllowed(pod, dev)) continue;
    ++allowed;
    if (!HasRoom(v, d, r, switches)) continue;
    ++fitting;
    if (keep_candidates) candidates.push_back(d);
  }
  if (of_type == 0) return FitResult::Unresolvable(absl::StrFormat("node has no %s", Plural(r.type)));
  if (allowed == 0)
    return FitResult::Unresolvable(absl::StrFormat(
        "node has no gpu of model %s", absl::StrJoin(pod.gpu_models, "|")));
  if (allowed < r.count)
    return FitResult::Unresolvable(absl::StrFormat("node has %d %s, pod needs %d", allowed,
                                                   Plural(r.type), r.count));
  if (is_gpu) {
    if (n.gpu_sharing == GpuSharing::kWholeOnly && !r.whole())
      return FitResult::Unresolvable(n.mig_strategy == MigStrategy::kSingle
                                         ? "node's GPUs are MIG instances, handed out whole only"
                                         : "node allows whole GPUs only");
    if (n.gpu_sharing == GpuSharing::kSharedOnly && r.whole())
      return FitResult::Unresolvable("node allows shared GPUs only");
  }
  if (nvlink) {
    std::set<int> sizes;
    for (const auto& g : n.nvlink_groups) sizes.insert(static_cast<int>(g.size()));
    if (!sizes.count(r.count))
      return FitResult::Unresolvable(absl::StrFormat(
          "request of %d GPUs is not an NVLink partition size (%s)", r.count,
          absl::StrJoin(sizes, ", ")));
  }

  // Fast path: no constraint, just the count of fitting devices.
  if (fitting < r.count) {
    if (switches != nullptr) {
      int anywhere = 0;
      for (int d = 0; d < v.num_devices(); ++d) anywhere += DeviceFits(v, d, pod, r);
      if (anywhere >= r.count)
        return FitResult::Unschedulable(kNoVfNearGpus);
    }
    return ShortageReason(v, pod, r);
  }
  if (!nvlink && !scoped && domains == nullptr) return FitResult::Ok();

  // Candidates in ascending minor order.
  std::sort(candidates.begin(), candidates.end(),
            [&](int a, int b) { return v.device(a).minor < v.device(b).minor; });

  std::vector<std::vector<int>> groups;
  if (nvlink) {
    std::map<int, int> by_minor;
    for (int d : candidates) by_minor[v.device(d).minor] = d;
    for (const auto& g : n.nvlink_groups) {
      if (static_cast<int>(g.size()) != r.count) continue;
      std::vector<int> members;
      for (int minor : g) {
        auto it = by_minor.find(minor);
        if (it == by_minor.end()) break;
        members.push_back(it->second);
      }
      if (members.size() == g.size()) groups.push_back(members);
    }
  } else {
    groups.push_back(std::move(candidates));
  }
  if (scoped) {
    // Split each group by PCIe switch or NUMA node; unknown topology never satisfies a scope.
    std::vector<std::vector<int>> split;
    for (const auto& g : groups) {
      std::map<std::string, std::vector<int>> by_key;
      for (int d : g) {
        const DeviceTopology& t = v.device(d).topology;
        std::string key = pod.scope == TopologyScope::kPcie
                              ? t.pcie_switch
                              : (t.numa_node < 0 ? "" : std::to_string(t.numa_node));
        if (!key.empty()) by_key[key].push_back(d);
      }
      for (auto& [key, members] : by_key)
        if (static_cast<int>(members.size()) >= r.count) split.push_back(std::move(members));
    }
    groups = std::move(split);
  }
  if (groups.empty()) {
    if (nvlink)
      return FitResult::Unschedulable(
          absl::StrFormat("no free NVLink group of %d GPUs", r.count));
    return FitResult::Unschedulable(absl::StrFormat(
        "no %s has %d free fitting %s",
        pod.scope == TopologyScope::kPcie ? "PCIe switch" : "NUMA node", r.count, Plural(r.type)));
  }
  if (domains) *domains = std::move(groups);
  return FitResult::Ok();
}

}  // namespace gpufleet
