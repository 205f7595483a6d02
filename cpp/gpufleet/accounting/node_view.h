// A read-only window on one node's devices and usage, handed to placement strategies.
#ifndef GPUFLEET_ACCOUNTING_NODE_VIEW_H_
#define GPUFLEET_ACCOUNTING_NODE_VIEW_H_

#include <cstdint>
#include <vector>

#include "gpufleet/core/node.h"

namespace gpufleet {

// Per-node totals kept current after every mutation, so a filter over thousands of nodes can reject
// most of them without touching their devices. GPU figures cover healthy GPUs only.
struct NodeUsage {
  // Copies of the node's capacities and flags, so the hot loop reads one compact array.
  int64_t cpu_capacity = 0;
  int64_t memory_capacity = 0;
  int64_t max_pods = 0;
  bool has_taints = false;
  bool has_nvlink = false;
  bool has_other_devices = false;  // devices that are not GPUs (RDMA, FPGA, ...)
  GpuSharing gpu_sharing = GpuSharing::kMixed;

  int64_t cpu_used = 0;
  int64_t memory_used = 0;
  int64_t pods_used = 0;
  int32_t num_devices = 0;      // all devices, any type or health (no Node access in hot loops)
  int32_t gpu_count = 0;        // healthy GPUs
  int32_t gpu_whole_free = 0;   // healthy GPUs nothing is allocated on
  int64_t gpu_core_capacity = 0;
  int64_t gpu_core_used = 0;
  int64_t gpu_memory_capacity = 0;
  int64_t gpu_memory_used = 0;
  int64_t gpu_memory_average = 0;   // capacity / count, kept so scoring needs no division
  int64_t gpu_min_core_capacity = 0;    // smallest healthy GPU: an untouched one holds at least
  int64_t gpu_min_memory_capacity = 0;  // this much, so requests below fit without a device scan
  int64_t gpu_max_free_core = 0;    // best single healthy GPU
  int64_t gpu_max_free_memory = 0;  // best single healthy GPU
};

struct NodeView {
  const Node* node = nullptr;
  const NodeUsage* usage = nullptr;
  const int64_t* used_core = nullptr;    // indexed like node->devices
  const int64_t* used_memory = nullptr;  // indexed like node->devices
  // Indexed like node->devices: per VF in flat order (core/rdma_vf.h), 1 while a pod holds it.
  // Null when no device of the node carries VFs.
  const std::vector<uint8_t>* vf_taken = nullptr;

  int num_devices() const { return static_cast<int>(node->devices.size()); }
  const Device& device(int i) const { return node->devices[i]; }
  int64_t free_core(int i) const { return node->devices[i].core - used_core[i]; }
  int64_t free_memory(int i) const { return node->devices[i].memory_bytes - used_memory[i]; }
  bool untouched(int i) const { return used_core[i] == 0 && used_memory[i] == 0; }
  bool has_vfs(int i) const { return vf_taken != nullptr && !vf_taken[i].empty(); }
  int free_vfs(int i) const {
    int n = 0;
    for (uint8_t t : vf_taken[i]) n += t == 0;
    return n;
  }
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_NODE_VIEW_H_
