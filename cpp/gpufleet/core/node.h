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
enum class GpuSharing { kMixed = 0, kWholeOnly = 1, kSharedOnly = 2 };

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  bool operator==(const Taint&) const = default;
};

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
  bool operator==(const Node&) const = default;
};

// Checks what a user can get wrong: empty name, duplicate (type, minor), negative capacities,
// GPU core not 100, NVLink groups naming unknown minors. The message names the node and field.
absl::Status ValidateNode(const Node& node);

const char* GpuSharingName(GpuSharing mode);
absl::Status ParseGpuSharing(const std::string& text, GpuSharing* out);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_NODE_H_
