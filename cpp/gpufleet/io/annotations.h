// Allocation records as pod annotations, and back: Koordinator's
// scheduling.koordinator.sh/device-allocated and gpushare's ALIYUN_COM_GPU_MEM_* keys. Rebuilding
// the accounting from bound pods' annotations is what makes a restart safe.
#ifndef GPUFLEET_IO_ANNOTATIONS_H_
#define GPUFLEET_IO_ANNOTATIONS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

inline constexpr char kDeviceAllocatedAnnotation[] = "scheduling.koordinator.sh/device-allocated";
inline constexpr char kGpushareIdx[] = "ALIYUN_COM_GPU_MEM_IDX";
inline constexpr char kGpusharePod[] = "ALIYUN_COM_GPU_MEM_POD";
inline constexpr char kGpushareDev[] = "ALIYUN_COM_GPU_MEM_DEV";
inline constexpr char kGpushareAssigned[] = "ALIYUN_COM_GPU_MEM_ASSIGNED";
inline constexpr char kGpushareAssumeTime[] = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";

// JSON: device type -> [{"minor", "resources": {name: quantity string}}].
std::string DeviceAllocatedJson(const Allocation& allocation, const Node& node);

// gpushare counts memory in units of `unit_bytes`, which must be positive: InvalidArgument naming
// unit_bytes otherwise.
absl::Status CheckUnitBytes(int64_t unit_bytes);

// The Koordinator annotation, plus gpushare's keys when `gpushare` (memory in `unit_bytes`). With
// a unit that CheckUnitBytes refuses there is no gpushare memory to write: only Koordinator's key.
std::map<std::string, std::string> AllocationAnnotations(const Allocation& allocation,
                                                         const Node& node, bool gpushare,
                                                         int64_t unit_bytes = int64_t{1} << 20);

// Device grants recorded in a bound pod's annotations (Koordinator's key wins over gpushare's).
// A pod with device requests and no allocation annotation is an error naming the pod, and so is a
// unit_bytes that CheckUnitBytes refuses.
absl::StatusOr<std::vector<DeviceGrant>> GrantsFromAnnotations(
    const std::map<std::string, std::string>& annotations, const Node& node, const Pod& pod,
    int64_t unit_bytes = int64_t{1} << 20);

// The grants must be exactly what the pod's request gives on those devices: per type the number
// of devices, and per device the core percent and the memory in bytes (a memory ratio taken of
// that device's memory; a whole request takes all of it), so whole and shared cannot be mixed up.
// An InvalidArgument names the pod, the annotation key and the difference:
//   pod ns/a: annotation scheduling.koordinator.sh/device-allocated grants 2 gpu devices, the pod
//   requests 1
absl::Status CheckGrantsMatchPod(const std::vector<DeviceGrant>& grants,
                                 const std::map<std::string, std::string>& annotations,
                                 const Node& node, const Pod& pod);

// Rebuilds a bound pod's allocation from its annotations after a restart: reserves and commits
// exactly the recorded devices (never a second choice), failing if they disagree with the pod's
// request (CheckGrantsMatchPod) or would over-commit. On failure the state is unchanged.
absl::StatusOr<Allocation> RestoreBoundPod(ClusterState& state, const Pod& pod,
                                           const std::string& node,
                                           const std::map<std::string, std::string>& annotations,
                                           int64_t unit_bytes = int64_t{1} << 20);

}  // namespace gpufleet

#endif  // GPUFLEET_IO_ANNOTATIONS_H_
