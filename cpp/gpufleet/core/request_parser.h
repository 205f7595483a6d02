// Turns Kubernetes-style resource requests in any of the field's vocabularies into one Pod request:
//   nvidia.com/gpu: N                        N whole GPUs
//   koordinator.sh/gpu: P                    P percent (<=100 one shared GPU, >100 multiples of 100)
//   koordinator.sh/gpu-core / gpu-memory / gpu-memory-ratio / gpu.shared
//   aliyun.com/gpu-mem                       gpushare memory units (MiB by default, GiB selectable)
//   koordinator.sh/rdma, koordinator.sh/fpga percent of one device, like koordinator.sh/gpu
//   nvidia.com/mig-<profile>: N              N MIG instances of that profile (device type
//                                            "mig-<profile>", NVIDIA's mixed strategy)
// Koordinator's validation rules are applied; each violation is an InvalidArgument naming the rule.
#ifndef GPUFLEET_CORE_REQUEST_PARSER_H_
#define GPUFLEET_CORE_REQUEST_PARSER_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/core/quantity.h"

namespace gpufleet {

inline constexpr char kNvidiaGpu[] = "nvidia.com/gpu";
inline constexpr char kKoordGpu[] = "koordinator.sh/gpu";
inline constexpr char kKoordGpuCore[] = "koordinator.sh/gpu-core";
inline constexpr char kKoordGpuMemory[] = "koordinator.sh/gpu-memory";
inline constexpr char kKoordGpuMemoryRatio[] = "koordinator.sh/gpu-memory-ratio";
inline constexpr char kKoordGpuShared[] = "koordinator.sh/gpu.shared";
inline constexpr char kKoordRdma[] = "koordinator.sh/rdma";
inline constexpr char kKoordFpga[] = "koordinator.sh/fpga";
inline constexpr char kAliyunGpuMem[] = "aliyun.com/gpu-mem";
inline constexpr char kNvidiaMigPrefix[] = "nvidia.com/mig-";

struct RequestParseOptions {
  // gpushare's memory unit for aliyun.com/gpu-mem: 1 MiB (its default) or 1 GiB.
  int64_t gpushare_unit_bytes = int64_t{1} << 20;
};

// Fills pod->cpu_milli, pod->memory_bytes and pod->devices from `requests` (name -> quantity
// string). On error the pod is left unchanged.
absl::Status ParseRequests(const std::map<std::string, std::string>& requests, Pod* pod,
                           const RequestParseOptions& options = {});
// The same from quantities already read (a pod's effective request, core/effective_request.h).
absl::Status ParseRequests(const ResourceQuantities& requests, Pod* pod,
                           const RequestParseOptions& options = {});

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_REQUEST_PARSER_H_
