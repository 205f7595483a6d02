// A node: allocatable cpu/memory/pods, labels, taints, devices and NVLink groups.
#ifndef GPUFLEET_CORE_NODE_H_
#define GPUFLEET_CORE_NODE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/core/device.h"

namespace gpufleet {

// How a node's GPUs may be handed out. gpushare's rule (a node is either by card or by memory) is
// kWholeOnly / kSharedOnly; kMixed lets whole and shared pods coexist, each on its own cards.
// Bounds on what one node may declare, far above real hardware, so a typo or a hostile file
// ("ten million GPUs") is an error instead of minutes of work and gigabytes of memory. ValidateNode
// applies the device and list bounds to every node; the capacity bounds (cpu, memory, pods) apply
// to nodes read from files and requests, since the simulator gives its nodes "unlimited" cpu.
inline constexpr int kMaxDevicesPerNode = 1024;
// Capacity bounds keep sums over many nodes inside int64; they admit the simulator's "unlimited".
inline constexpr int64_t kMaxNodeCpuMilli = int64_t{1} << 40;     // about 1.1 billion cores
inline constexpr int64_t kMaxNodeMemoryBytes = int64_t{1} << 60;  // 1Ei
inline constexpr int64_t kMaxNodePods = int64_t{1} << 20;         // 1,048,576
inline constexpr int64_t kMaxDeviceMemoryBytes = int64_t{1} << 50;    // 1Pi per device
inline constexpr int kMaxNodeListEntries = 1024;  // labels, taints, NVLink groups

enum class GpuSharing { kMixed = 0, kWholeOnly = 1, kSharedOnly = 2 };

// How MIG instances are offered, as in NVIDIA's device plugin: kMixed gives each instance the
// device type "mig-<profile>" (resource nvidia.com/mig-<profile>) beside the node's whole GPUs;
// kSingle makes the instances the node's "gpu" devices (all GPUs split, all one profile).
enum class MigStrategy { kMixed = 0, kSingle = 1 };

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  bool operator==(const Taint&) const = default;
};

// NoSchedule, PreferNoSchedule or NoExecute (Kubernetes' taint effects).
bool IsTaintEffect(const std::string& effect);

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t max_pods = 110;
  std::vector<Device> devices;
  // NVLink partitions as lists of GPU minors (e.g. {0,1},{2,3},...,{0..3},{4..7},{0..7}).
  // When present, a multi-GPU request must take exactly one group of its size.
  std::vector<std::vector<int>> nvlink_groups;
  GpuSharing gpu_sharing = GpuSharing::kMixed;
  MigStrategy mig_strategy = MigStrategy::kMixed;
  bool operator==(const Node&) const = default;
};

// Checks what a user can get wrong: empty name, duplicate (type, minor) or device id, negative
// capacities, more devices or list entries than the limits above, GPU core not 100, NVLink groups naming unknown
// minors or overlapping without nesting, unknown taint effects, and MIG geometry (ValidateMig in
// core/mig.h). The message names the node and field.
absl::Status ValidateNode(const Node& node);

const char* GpuSharingName(GpuSharing mode);
const char* MigStrategyName(MigStrategy strategy);
absl::Status ParseMigStrategy(const std::string& text, MigStrategy* out);
absl::Status ParseGpuSharing(const std::string& text, GpuSharing* out);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_NODE_H_
