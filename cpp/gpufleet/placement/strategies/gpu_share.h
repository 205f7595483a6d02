// The GPU-sharing view used by the openb policies (Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023): a node
// is its free CPU plus the free share of each GPU; a task is its CPU, a share of one GPU (or a
// number of whole GPUs) and the GPU models it accepts. GPU memory is not a dimension here, as in
// the paper: shares are GPU core percent (openb's gpu_milli / 10).
#ifndef GPUFLEET_PLACEMENT_STRATEGIES_GPU_SHARE_H_
#define GPUFLEET_PLACEMENT_STRATEGIES_GPU_SHARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

// A task's demand: `core` percent on each of `count` GPUs (core 100 = whole GPUs, count 0 =
// CPU-only), `cpu_milli` on the node, restricted to `models` (empty = any).
struct ShareTask {
  int64_t cpu_milli = 0;
  int core = 0;
  int count = 0;
  std::vector<std::string> models;
  bool shared() const { return count == 1 && core < 100; }
  bool whole() const { return count > 0 && core >= 100; }
  int64_t total_core() const { return static_cast<int64_t>(core) * count; }
  bool operator==(const ShareTask&) const = default;
};

ShareTask TaskOf(const Pod& pod);

// Device type checks run per device per candidate node; comparing the length first keeps them
// cheap.
inline bool IsGpuType(const std::string& type) {
  return type.size() == 3 && type[0] == 'g' && type[1] == 'p' && type[2] == 'u';
}

// A node's healthy GPUs: free core percent and local device index of each, in device order.
// Nodes with more than kMaxGpus GPUs keep the first kMaxGpus (no real node comes close).
struct GpuSlots {
  static constexpr int kMaxGpus = 32;
  int n = 0;
  int left[kMaxGpus];
  int device[kMaxGpus];
  int64_t total_left() const;
};

GpuSlots SlotsOf(const NodeView& view);
int64_t CpuLeft(const NodeView& view);

// True when `task` may use the GPU at local index `device` (its model is accepted).
bool ModelAccepted(const ShareTask& task, const NodeView& view, int device);

// The devices a shared task would take by best fit: the fitting GPU with the least free share,
// ties to the lower index (the paper's simulator default); -1 if none fits.
int BestFitSlot(const ShareTask& task, const NodeView& view, const GpuSlots& slots);

// Whole-GPU tasks take the first untouched GPUs in device order; returns false if too few.
bool FirstFreeSlots(const ShareTask& task, const NodeView& view, const GpuSlots& slots,
                    std::vector<int>* slot_indices);

// ChooseDevices shared by the baselines: a shared request takes the fitting GPU with the least
// free share (best fit, ties to the lower minor); whole GPUs are the first free ones of the first
// domain that has enough (the paper's simulator takes free GPUs in index order).
bool ChooseBestFitDevices(const NodeView& view, const DeviceRequest& request,
                          const std::vector<std::vector<int>>& domains, std::vector<int>* chosen);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_STRATEGIES_GPU_SHARE_H_
