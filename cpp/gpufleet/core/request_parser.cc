#include "gpufleet/core/request_parser.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/core/device.h"
#include "gpufleet/core/mig.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet {
namespace {

absl::Status Rule(const std::string& what) { return absl::InvalidArgumentError(what); }

// Every resource this parser reads is an extended resource: Kubernetes accepts whole numbers
// only, so "1.5" or "500m" is an error here instead of being rounded up.
absl::StatusOr<int64_t> Count(const ResourceQuantities& r, const char* name) {
  auto it = r.find(name);
  if (it == r.end()) return int64_t{0};
  auto v = ResourceValue(name, it->second);
  if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("request ", v.status().message()));
  return *v;
}

// Device counts are bounded by what one node may hold, so a huge quantity is rejected rather
// than truncated into a small or negative int.
absl::Status CheckCount(const char* name, int64_t count) {
  if (count > kMaxDevicesPerNode)
    return Rule(absl::StrFormat("request %s asks for %d devices; a node has at most %d", name,
                                count, kMaxDevicesPerNode));
  return absl::OkStatus();
}

// koordinator.sh/gpu, rdma, fpga: percent of one device; above 100 it must name whole devices.
absl::StatusOr<DeviceRequest> PercentRequest(const std::string& type, const char* name,
                                             int64_t pct) {
  if (pct > 100 && pct % 100 != 0)
    return Rule(absl::StrFormat(
        "%s=%d: values over 100 must be a multiple of 100 (whole devices)", name, pct));
  RETURN_IF_ERROR(CheckCount(name, pct / 100));
  DeviceRequest r;
  r.type = type;
  r.count = pct > 100 ? static_cast<int>(pct / 100) : 1;
  r.core = pct > 100 ? 100 : pct;
  r.memory_ratio = type == kGpu ? r.core : 0;
  return r;
}

bool IsIgnoredResource(const std::string& name) {
  return name == "cpu" || name == "memory" || name == "pods" || name == "ephemeral-storage" ||
         absl::StartsWith(name, "hugepages-") || absl::StrContains(name, "/");
}

absl::StatusOr<std::optional<DeviceRequest>> ParseGpu(const ResourceQuantities& r,
                                                      const RequestParseOptions& options) {
  ASSIGN_OR_RETURN(int64_t nvidia, Count(r, kNvidiaGpu));
  ASSIGN_OR_RETURN(int64_t koord, Count(r, kKoordGpu));
  ASSIGN_OR_RETURN(int64_t core, Count(r, kKoordGpuCore));
  ASSIGN_OR_RETURN(int64_t ratio, Count(r, kKoordGpuMemoryRatio));
  ASSIGN_OR_RETURN(int64_t shared, Count(r, kKoordGpuShared));
  ASSIGN_OR_RETURN(int64_t memory, Count(r, kKoordGpuMemory));
  ASSIGN_OR_RETURN(int64_t aliyun_units, Count(r, kAliyunGpuMem));
  if (r.count(kKoordGpuShared) && shared == 0)
    return Rule(absl::StrFormat("request %s=0: give at least 1 GPU to share over, or leave it out",
                                kKoordGpuShared));
  if (memory > kMaxDeviceMemoryBytes * kMaxDevicesPerNode)
    return Rule(absl::StrFormat("request %s=%d bytes is more than a node's GPUs may hold",
                                kKoordGpuMemory, memory));
  bool any_koord = koord || core || ratio || memory || shared;

  if (nvidia && (any_koord || aliyun_units))
    return Rule("mixing nvidia.com/gpu with koordinator.sh or aliyun.com GPU resources is invalid");
  if (aliyun_units && any_koord)
    return Rule("mixing aliyun.com/gpu-mem with koordinator.sh GPU resources is invalid");

  DeviceRequest g;
  g.type = kGpu;
  if (nvidia) {
    RETURN_IF_ERROR(CheckCount(kNvidiaGpu, nvidia));
    g.count = static_cast<int>(nvidia);
    g.core = 100;
    g.memory_ratio = 100;
    return std::optional<DeviceRequest>(g);
  }
  if (aliyun_units) {
    g.count = 1;
    g.core = 0;
    if (__builtin_mul_overflow(aliyun_units, options.gpushare_unit_bytes, &g.memory_bytes) ||
        g.memory_bytes > kMaxDeviceMemoryBytes)
      return Rule(absl::StrFormat("request %s=%d units is more memory than one GPU may have (1Pi)",
                                  kAliyunGpuMem, aliyun_units));
    return std::optional<DeviceRequest>(g);
  }
  if (!any_koord) return std::optional<DeviceRequest>();

  if (koord) {
    if (core || ratio || memory || shared)
      return Rule("koordinator.sh/gpu cannot be combined with gpu-core, gpu-memory, "
                  "gpu-memory-ratio or gpu.shared");
    ASSIGN_OR_RETURN(DeviceRequest pr, PercentRequest(kGpu, kKoordGpu, koord));
    return std::optional<DeviceRequest>(pr);
  }
  if (memory && ratio)
    return Rule("gpu-memory and gpu-memory-ratio cannot both be requested");
  if (core && !memory && !ratio)
    return Rule("gpu-core alone is invalid: request gpu-memory or gpu-memory-ratio with it");

  if (shared) {
    // gpu.shared=N: N devices, each given an equal part of core, ratio and memory.
    RETURN_IF_ERROR(CheckCount(kKoordGpuShared, shared));
    if (core % shared != 0 || ratio % shared != 0)
      return Rule(absl::StrFormat(
          "with gpu.shared=%d, gpu-core and gpu-memory-ratio must be multiples of %d", shared,
          shared));
    if (core > 100 * shared || ratio > 100 * shared)
      return Rule(absl::StrFormat(
          "with gpu.shared=%d, gpu-core and gpu-memory-ratio must be at most %d", shared,
          100 * shared));
    if (memory % shared != 0)
      return Rule(absl::StrFormat("with gpu.shared=%d, gpu-memory must divide evenly by %d",
                                  shared, shared));
    if (!core && !memory && !ratio)
      return Rule("gpu.shared needs gpu-core with gpu-memory or gpu-memory-ratio");
    g.count = static_cast<int>(shared);
    g.core = core / shared;
    g.memory_ratio = ratio / shared;
    g.memory_bytes = memory / shared;
    return std::optional<DeviceRequest>(g);
  }

  if (core > 100 && core % 100 != 0)
    return Rule(absl::StrFormat(
        "gpu-core=%d: values over 100 must be a multiple of 100 (whole GPUs)", core));
  if (ratio > 100 && ratio % 100 != 0)
    return Rule(absl::StrFormat(
        "gpu-memory-ratio=%d: values over 100 must be a multiple of 100 (whole GPUs)", ratio));
  RETURN_IF_ERROR(CheckCount(kKoordGpuCore, core / 100));
  RETURN_IF_ERROR(CheckCount(kKoordGpuMemoryRatio, ratio / 100));
  int64_t count = 1;
  if (core > 100) count = core / 100;
  if (ratio > 100) {
    if (core && core / 100 != ratio / 100 && core > 100)
      return Rule("gpu-core and gpu-memory-ratio ask for different numbers of GPUs");
    if (core && core <= 100)
      return Rule("gpu-memory-ratio over 100 needs gpu-core of the same multiple of 100");
    count = ratio / 100;
  }
  if (core > 100 && ratio && ratio != core)
    return Rule("gpu-core over 100 needs gpu-memory-ratio equal to it");
  if (memory % count != 0)
    return Rule("gpu-memory must divide evenly over the requested GPUs");
  g.count = static_cast<int>(count);
  g.core = count > 1 ? 100 : core;
  g.memory_ratio = count > 1 && ratio ? 100 : ratio;
  g.memory_bytes = memory / count;
  return std::optional<DeviceRequest>(g);
}

// nvidia.com/mig-<profile>: whole instances of one profile, counted like nvidia.com/gpu.
absl::StatusOr<DeviceRequest> MigRequest(const std::string& name, const Quantity& value) {
  const std::string profile = name.substr(sizeof(kNvidiaMigPrefix) - 1);
  if (!IsKnownMigProfile(profile)) {
    std::vector<std::string> all;
    for (const MigModel& m : mig_data::kModels) all.push_back(MigProfileNames(m));
    return Rule(absl::StrFormat("request %s: \"%s\" is not a MIG profile of any known GPU (%s)",
                                name, profile, absl::StrJoin(all, "; ")));
  }
  auto v = ResourceValue(name, value);
  if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("request ", v.status().message()));
  if (*v <= 0)
    return Rule(absl::StrFormat("request %s=%s: give a positive number of instances", name,
                                value.text));
  RETURN_IF_ERROR(CheckCount(name.c_str(), *v));
  DeviceRequest r;
  r.type = MigDeviceType(profile);
  r.count = static_cast<int>(*v);
  r.core = 100;
  r.memory_ratio = 100;
  return r;
}

bool IsMigResource(const std::string& name) { return absl::StartsWith(name, kNvidiaMigPrefix); }

bool IsKnownResource(const std::string& name) {
  return name == kNvidiaGpu || name == kKoordGpu || name == kKoordGpuCore ||
         name == kKoordGpuMemory || name == kKoordGpuMemoryRatio || name == kKoordGpuShared ||
         name == kKoordRdma || name == kKoordFpga || name == kAliyunGpuMem || IsMigResource(name);
}

bool IsOurVocabulary(const std::string& name) {
  return absl::StartsWith(name, "koordinator.sh/gpu") || absl::StartsWith(name, "koordinator.sh/rdma") ||
         absl::StartsWith(name, "koordinator.sh/fpga") || absl::StartsWith(name, "aliyun.com/gpu-mem") ||
         name == "nvidia.com/gpus";
}

// A misspelt name in a vocabulary we manage is an error, not a silently ignored resource.
absl::Status CheckResourceName(const std::string& name) {
  if (!IsKnownResource(name) && (IsOurVocabulary(name) || !IsIgnoredResource(name)))
    return absl::InvalidArgumentError(absl::StrFormat("unknown resource name \"%s\"", name));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseRequests(const std::map<std::string, std::string>& requests, Pod* pod,
                           const RequestParseOptions& options) {
  for (const auto& [name, value] : requests) RETURN_IF_ERROR(CheckResourceName(name));
  ResourceQuantities read;
  for (const auto& [name, value] : requests) {
    auto q = ReadQuantity(value);
    if (!q.ok())
      return absl::InvalidArgumentError(absl::StrCat("request ", name, ": ", q.status().message()));
    read.emplace(name, *std::move(q));
  }
  return ParseRequests(read, pod, options);
}

absl::Status ParseRequests(const ResourceQuantities& requests, Pod* pod,
                           const RequestParseOptions& options) {
  for (const auto& [name, value] : requests) {
    RETURN_IF_ERROR(CheckResourceName(name));
    // Resources the scheduler does not count must still be quantities Kubernetes accepts.
    if (!IsKnownResource(name) && name != "cpu" && name != "memory") {
      auto v = ResourceValue(name, value);
      if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("request ", v.status().message()));
    }
  }
  int64_t cpu = 0, memory = 0;
  for (auto [name, out, limit] : {std::tuple<const char*, int64_t*, int64_t>{"cpu", &cpu, kMaxNodeCpuMilli},
                                  {"memory", &memory, kMaxNodeMemoryBytes}}) {
    auto it = requests.find(name);
    if (it == requests.end()) continue;
    auto v = ResourceValue(name, it->second);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("request ", v.status().message()));
    if (*v > limit)
      return Rule(absl::StrFormat("request %s=%s is more than a node may have (%s)", name,
                                  it->second.text, name == std::string("cpu") ? FormatMilli(limit)
                                                                              : FormatBytes(limit)));
    *out = *v;
  }
  std::vector<DeviceRequest> devices;
  ASSIGN_OR_RETURN(std::optional<DeviceRequest> gpu, ParseGpu(requests, options));
  if (gpu && gpu->count > 0) devices.push_back(*gpu);
  for (const auto& [type, name] : {std::pair<const char*, const char*>{kRdma, kKoordRdma},
                                   std::pair<const char*, const char*>{kFpga, kKoordFpga}}) {
    ASSIGN_OR_RETURN(int64_t pct, Count(requests, name));
    if (pct == 0) continue;
    ASSIGN_OR_RETURN(DeviceRequest r, PercentRequest(type, name, pct));
    devices.push_back(r);
  }
  for (const auto& [name, value] : requests) {
    if (!IsMigResource(name)) continue;
    ASSIGN_OR_RETURN(DeviceRequest r, MigRequest(name, value));
    devices.push_back(r);
  }
  std::sort(devices.begin(), devices.end(),
            [](const DeviceRequest& a, const DeviceRequest& b) { return a.type < b.type; });
  pod->cpu_milli = cpu;
  pod->memory_bytes = memory;
  pod->devices = std::move(devices);
  return absl::OkStatus();
}

const char* TopologyScopeName(TopologyScope scope) {
  switch (scope) {
    case TopologyScope::kNone: return "none";
    case TopologyScope::kPcie: return "pcie";
    case TopologyScope::kNuma: return "numa";
  }
  return "none";
}

}  // namespace gpufleet
