#include "gpufleet/io/annotations.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gpufleet/core/json_text.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/rdma_vf.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet {
namespace {

const Device* FindDevice(const Node& node, const std::string& type, int minor) {
  for (const Device& d : node.devices)
    if (d.type == type && d.minor == minor) return &d;
  return nullptr;
}

int64_t RatioOf(int64_t bytes, int64_t capacity) {
  if (capacity <= 0) return 0;
  return (bytes * 100 + capacity - 1) / capacity;
}

// Koordinator's "extension": {"vfs": [{"minor", "busID"}]} on an rdma entry. Whether the VFs
// exist on the NIC and are free is checked by the reservation itself.
absl::Status VfsFromExtension(const Json& entry, const std::string& key, const Pod& pod,
                              DeviceGrant* g) {
  auto ext = entry.find("extension");
  if (ext == entry.end() || ext->is_null()) return absl::OkStatus();
  const std::string where =
      absl::StrFormat("pod %s: annotation %s: %s %d extension", pod.name, key, g->type, g->minor);
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
  };
  if (!ext->is_object()) return bad("not an object");
  RETURN_IF_ERROR(CheckKnownKeys(*ext, where, {"vfs"}));
  auto vfs = ext->find("vfs");
  if (vfs == ext->end() || vfs->is_null()) return absl::OkStatus();
  if (!vfs->is_array()) return bad("vfs is not a list");
  if (vfs->size() > static_cast<size_t>(kMaxVfsPerDevice))
    return bad(absl::StrFormat("%d VFs is more than a NIC may have", vfs->size()));
  for (size_t k = 0; k < vfs->size(); ++k) {
    const Json& v = (*vfs)[k];
    if (!v.is_object() || !v.contains("minor") || !IsIntegerIn<int>(v["minor"]) ||
        !v.contains("busID") || !v["busID"].is_string())
      return bad(absl::StrFormat("vfs[%d] needs an integer minor and a string busID", k));
    RETURN_IF_ERROR(CheckKnownKeys(v, absl::StrFormat("%s vfs[%d]", where, k), {"minor", "busID"}));
    g->vfs.push_back({v["minor"].get<int>(), v["busID"].get<std::string>()});
  }
  return absl::OkStatus();
}

}  // namespace

std::string DeviceAllocatedJson(const Allocation& a, const Node& node) {
  Json out = Json::object();
  for (const DeviceGrant& g : a.devices) {
    Json resources = Json::object();
    if (g.type == kGpu) {
      const Device* d = FindDevice(node, g.type, g.minor);
      resources[kKoordGpuCore] = std::to_string(g.core);
      resources[kKoordGpuMemory] = FormatBytes(g.memory_bytes);
      resources[kKoordGpuMemoryRatio] =
          std::to_string(RatioOf(g.memory_bytes, d ? d->memory_bytes : 0));
    } else {
      resources[absl::StrCat("koordinator.sh/", g.type)] = std::to_string(g.core);
      // Devices with memory of their own (MIG instances) record it, so a restore is exact.
      if (g.memory_bytes != 0) resources[kKoordGpuMemory] = FormatBytes(g.memory_bytes);
    }
    Json entry = {{"minor", g.minor}, {"resources", resources}};
    if (!g.vfs.empty()) {
      Json vfs = Json::array();
      for (const VirtualFunction& vf : g.vfs) vfs.push_back({{"minor", vf.minor}, {"busID", vf.bus_id}});
      entry["extension"] = {{"vfs", vfs}};
    }
    out[g.type].push_back(std::move(entry));
  }
  return out.dump();
}

absl::Status CheckUnitBytes(int64_t unit_bytes) {
  if (unit_bytes > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("unit_bytes must be a positive number of bytes, got %d", unit_bytes));
}

std::map<std::string, std::string> AllocationAnnotations(const Allocation& a, const Node& node,
                                                         bool gpushare, int64_t unit_bytes) {
  std::map<std::string, std::string> out;
  out[kDeviceAllocatedAnnotation] = DeviceAllocatedJson(a, node);
  if (!gpushare || !CheckUnitBytes(unit_bytes).ok()) return out;
  std::vector<std::string> minors;
  int64_t memory = 0, device_memory = 0;
  for (const DeviceGrant& g : a.devices) {
    if (g.type != kGpu) continue;
    minors.push_back(std::to_string(g.minor));
    memory += g.memory_bytes;
    if (const Device* d = FindDevice(node, g.type, g.minor)) device_memory = d->memory_bytes;
  }
  if (minors.empty()) return out;
  out[kGpushareIdx] = absl::StrJoin(minors, ",");
  out[kGpusharePod] = std::to_string(memory / unit_bytes);
  out[kGpushareDev] = std::to_string(device_memory / unit_bytes);
  out[kGpushareAssigned] = "false";
  out[kGpushareAssumeTime] = std::to_string(a.assume_time_ns);
  return out;
}

absl::StatusOr<std::vector<DeviceGrant>> GrantsFromAnnotations(
    const std::map<std::string, std::string>& annotations, const Node& node, const Pod& pod,
    int64_t unit_bytes) {
  RETURN_IF_ERROR(CheckUnitBytes(unit_bytes));
  std::vector<DeviceGrant> grants;
  auto bad = [&](const std::string& key, const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrFormat("pod %s: annotation %s: %s", pod.name, key, why));
  };
  if (auto it = annotations.find(kDeviceAllocatedAnnotation); it != annotations.end()) {
    auto parsed = ParseJsonText(it->second, "value");
    if (!parsed.ok()) return bad(it->first, std::string(parsed.status().message()));
    const Json& j = *parsed;
    if (!j.is_object()) return bad(it->first, "not a JSON object");
    for (auto type = j.begin(); type != j.end(); ++type) {
      if (!type->is_array()) return bad(it->first, type.key() + " is not a list");
      for (const Json& entry : *type) {
        if (!entry.is_object() || !entry.contains("minor") || !entry["minor"].is_number_integer())
          return bad(it->first, "an entry has no integer minor");
        RETURN_IF_ERROR(CheckKnownKeys(entry, absl::StrFormat("pod %s: annotation %s: %s entry",
                                                              pod.name, it->first, type.key()),
                                       {"minor", "resources", "id", "extension"}));
        // Read wide first: a huge minor must not wrap onto a real device.
        const int64_t minor = entry["minor"].get<int64_t>();
        if (minor < 0 || minor > std::numeric_limits<int>::max())
          return bad(it->first, absl::StrFormat("minor %d is out of range", minor));
        DeviceGrant g;
        g.type = type.key();
        g.minor = static_cast<int>(minor);
        const Device* d = FindDevice(node, g.type, g.minor);
        if (d == nullptr)
          return bad(it->first, absl::StrFormat("node %s has no %s %d", node.name, g.type, g.minor));
        Json res = entry.value("resources", Json::object());
        if (!res.is_object()) return bad(it->first, "resources is not an object");
        auto quantity = [&](const std::string& key, int64_t* out) -> absl::Status {
          if (!res.contains(key)) return absl::OkStatus();
          const Json& v = res[key];
          if (!v.is_string() && !v.is_number())
            return bad(it->first, absl::StrFormat("%s: expected a quantity, got %s", key, v.dump()));
          std::string text = v.is_string() ? v.get<std::string>() : v.dump();
          auto q = ParseResourceQuantity(key, text);  // extended resources: whole numbers only
          if (!q.ok()) return bad(it->first, std::string(q.status().message()));
          *out = *q;
          return absl::OkStatus();
        };
        std::string core_key = g.type == kGpu ? kKoordGpuCore : "koordinator.sh/" + g.type;
        RETURN_IF_ERROR(CheckKnownKeys(
            res, absl::StrFormat("pod %s: annotation %s: %s %d resources", pod.name, it->first,
                                 g.type, g.minor),
            {core_key, kKoordGpuMemory, kKoordGpuMemoryRatio}));
        int64_t ratio = -1;
        g.core = 0;
        RETURN_IF_ERROR(quantity(core_key, &g.core));
        RETURN_IF_ERROR(quantity(kKoordGpuMemory, &g.memory_bytes));
        RETURN_IF_ERROR(quantity(kKoordGpuMemoryRatio, &ratio));
        // A per-device ratio is a percent of that device; anything larger would also overflow
        // ratio x memory below.
        if (ratio > 100)
          return bad(it->first, absl::StrFormat("%s %d of %s %d is over 100", kKoordGpuMemoryRatio,
                                                ratio, g.type, g.minor));
        if (g.memory_bytes == 0 && ratio > 0) g.memory_bytes = (ratio * d->memory_bytes + 99) / 100;
        RETURN_IF_ERROR(VfsFromExtension(entry, it->first, pod, &g));
        grants.push_back(g);
      }
    }
    return grants;
  }
  if (auto it = annotations.find(kGpushareIdx); it != annotations.end()) {
    auto pod_units = annotations.find(kGpusharePod);
    if (pod_units == annotations.end()) return bad(kGpusharePod, "missing");
    auto parsed_units = ParseResourceQuantity(kAliyunGpuMem, pod_units->second);
    if (!parsed_units.ok()) return bad(kGpusharePod, std::string(parsed_units.status().message()));
    const int64_t units = *parsed_units;
    if (units == 0) return bad(kGpusharePod, "a grant of 0 memory units is no grant");
    std::vector<std::string> parts = absl::StrSplit(it->second, ',', absl::SkipEmpty());
    if (parts.empty()) return bad(kGpushareIdx, "empty");
    for (const std::string& part : parts) {
      DeviceGrant g;
      g.type = kGpu;
      // Plain digits only: SimpleAtoi would also take " 1" and "+1".
      if (part.empty() || part.size() > 9 ||
          !std::all_of(part.begin(), part.end(), [](char c) { return absl::ascii_isdigit(c); }) ||
          !absl::SimpleAtoi(part, &g.minor))
        return bad(kGpushareIdx, "\"" + absl::CEscape(part) + "\" is not a minor");
      if (FindDevice(node, kGpu, g.minor) == nullptr)
        return bad(kGpushareIdx, absl::StrFormat("node %s has no gpu %d", node.name, g.minor));
      g.core = 0;
      int64_t total = 0;
      if (__builtin_mul_overflow(units, unit_bytes, &total))
        return bad(kGpusharePod, absl::StrFormat("%d units of %d bytes is too large", units,
                                                 unit_bytes));
      g.memory_bytes = total / static_cast<int64_t>(parts.size());
      grants.push_back(g);
    }
    return grants;
  }
  if (!pod.devices.empty())
    return absl::InvalidArgumentError(absl::StrFormat(
        "pod %s requests devices but carries no %s or %s annotation", pod.name,
        kDeviceAllocatedAnnotation, kGpushareIdx));
  return grants;
}

absl::Status CheckGrantsMatchPod(const std::vector<DeviceGrant>& grants,
                                 const std::map<std::string, std::string>& annotations,
                                 const Node& node, const Pod& pod) {
  const bool koordinator = annotations.count(kDeviceAllocatedAnnotation) > 0;
  const char* key = koordinator ? kDeviceAllocatedAnnotation : kGpushareIdx;
  auto differ = [&](const char* k, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrFormat("pod %s: annotation %s %s", pod.name, k, what));
  };
  // Types named by either side, in a stable order.
  std::set<std::string> types;
  for (const DeviceGrant& g : grants) types.insert(g.type);
  for (const DeviceRequest& r : pod.devices) types.insert(r.type);
  for (const std::string& type : types) {
    const DeviceRequest* r = pod.Find(type);
    int requested = r ? r->count : 0;
    // Joint GPU+RDMA on NICs with VFs: one NIC per PCIe switch of the granted GPUs.
    if (type == kRdma && r != nullptr && pod.Find(kGpu) != nullptr && NodeHasVfs(node)) {
      std::set<std::string> switches;
      for (const DeviceGrant& g : grants)
        if (const Device* d = g.type == kGpu ? FindDevice(node, g.type, g.minor) : nullptr)
          switches.insert(d->topology.pcie_switch);
      requested = static_cast<int>(switches.size());
    }
    int granted = 0;
    for (const DeviceGrant& g : grants) granted += g.type == type;
    if (granted != requested)
      return differ(key, absl::StrFormat("grants %d %s devices, the pod requests %d", granted,
                                         type, requested));
    for (const DeviceGrant& g : grants) {
      if (g.type != type) continue;
      const Device* d = FindDevice(node, g.type, g.minor);
      if (d == nullptr) continue;  // GrantsFromAnnotations already refused unknown devices
      const int64_t core = r->whole() ? d->core : r->core;
      const int64_t memory = r->whole() ? d->memory_bytes : RequestBytesOn(*r, *d);
      const std::string what = r->whole() ? "a whole device" : "a shared device";
      const size_t vfs_expected = d->vf_groups.empty() ? 0 : 1;
      if (g.vfs.size() != vfs_expected)
        return differ(key, absl::StrFormat("grants %s %d with %d virtual functions; %s", type,
                                           g.minor, g.vfs.size(),
                                           vfs_expected ? "its NIC hands out exactly one per grant"
                                                        : "it has none"));
      if (g.core != core)
        return differ(key, absl::StrFormat("grants %s %d core %d%%, the pod requests %d%% (%s)",
                                           type, g.minor, g.core, core, what));
      if (g.memory_bytes != memory)
        return differ(koordinator ? kDeviceAllocatedAnnotation : kGpusharePod,
                      absl::StrFormat("grants %s %d memory %s, the pod requests %s on that "
                                      "device (%s)",
                                      type, g.minor, FormatBytes(g.memory_bytes),
                                      FormatBytes(memory), what));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Allocation> RestoreBoundPod(ClusterState& state, const Pod& pod,
                                           const std::string& node,
                                           const std::map<std::string, std::string>& annotations,
                                           int64_t unit_bytes) {
  int index = state.FindNode(node);
  if (index < 0)
    return absl::NotFoundError(absl::StrFormat("pod %s: node %s does not exist", pod.name, node));
  ASSIGN_OR_RETURN(std::vector<DeviceGrant> grants,
                   GrantsFromAnnotations(annotations, state.node(index), pod, unit_bytes));
  RETURN_IF_ERROR(CheckGrantsMatchPod(grants, annotations, state.node(index), pod));
  Allocation a;
  a.pod = pod.name;
  a.node = node;
  a.cpu_milli = pod.cpu_milli;
  a.memory_bytes = pod.memory_bytes;
  a.devices = std::move(grants);
  if (auto it = annotations.find(kGpushareAssumeTime); it != annotations.end())
    (void)absl::SimpleAtoi(it->second, &a.assume_time_ns);
  RETURN_IF_ERROR(state.Reserve(a));
  RETURN_IF_ERROR(state.Commit(a.pod));
  return *state.FindAllocation(a.pod);
}

}  // namespace gpufleet
