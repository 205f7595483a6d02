// GPU fragmentation against a workload distribution, as defined by Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent" (USENIX
// ATC 2023), Section 4. A node's free GPU share is fragmented for a task when the task cannot use
// it: all of it when the task cannot run on the node at all (too little CPU, no accepted GPU model,
// too few GPUs with enough free share, or the task wants no GPU), otherwise the free share of the
// GPUs whose free share is below the task's per-GPU request. The node's fragmentation is the
// expectation of that amount over the distribution of typical tasks (task shape -> frequency).
#ifndef GPUFLEET_PLACEMENT_STRATEGIES_FRAGMENTATION_H_
#define GPUFLEET_PLACEMENT_STRATEGIES_FRAGMENTATION_H_

#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/placement/strategies/gpu_share.h"

namespace gpufleet {

class GpuWorkload {
 public:
  struct Entry {
    ShareTask task;
    double weight = 0.0;  // normalised: weights sum to 1
  };

  GpuWorkload() = default;
  // Weighted task shapes; weights must be non-negative with a positive sum (normalised here).
  static absl::StatusOr<GpuWorkload> Make(std::vector<Entry> entries);
  // The paper's typical tasks: count the shapes (cpu, per-GPU share, GPU count, models) of `pods`,
  // keep the most frequent ones until they cover `coverage` of all pods (0.95 in the paper's
  // experiments), and renormalise. CPU-only pods are counted (they make every free GPU a fragment).
  static GpuWorkload FromTasks(absl::Span<const ShareTask> tasks, double coverage = 0.95);
  // [[cpu_milli, core_percent, gpu_count, weight], ...] or objects with those keys plus "models".
  static absl::StatusOr<GpuWorkload> FromJson(const Json& json);
  Json ToJson() const;

  const std::vector<Entry>& entries() const { return entries_; }
  // True when some task limits GPU models: fragmentation then depends on the node's models too.
  bool limits_models() const { return !with_models_.empty(); }
  bool empty() const { return entries_.empty(); }

  // Expected fragmented GPU share (core percent: 100 = one GPU) of a node with `cpu_left` free
  // CPU and GPUs `slots`; `view` supplies the GPU models for tasks that restrict them.
  double Fragmentation(const NodeView& view, const GpuSlots& slots, int64_t cpu_left) const;

  // For each task that limits models (in order), the slots whose GPU model it accepts, one bit
  // per slot. Models are fixed per GPU, so a caller that weighs several changes of free share on
  // one node (fgd tries every GPU) computes them once and passes them to the overload below,
  // which then compares no strings.
  using SlotMasks = absl::InlinedVector<uint32_t, 16>;
  SlotMasks AcceptedSlots(const NodeView& view, const GpuSlots& slots) const;
  double Fragmentation(const GpuSlots& slots, int64_t cpu_left, const SlotMasks& accepted) const;

 private:
  void Index();

  std::vector<Entry> entries_;
  // For the fast path: GPU tasks without model limits by decreasing per-GPU share, the total
  // weight of CPU-only tasks, and the tasks that limit models (checked device by device).
  std::vector<Entry> by_core_;
  std::vector<Entry> with_models_;
  double cpu_only_weight_ = 0.0;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_STRATEGIES_FRAGMENTATION_H_
