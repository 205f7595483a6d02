// Node-level utilisation after a hypothetical placement, the quantity that Kubernetes'
// MostAllocated / LeastAllocated (and Koordinator's device variants) score.
#ifndef GPUFLEET_PLACEMENT_NODE_SCORE_H_
#define GPUFLEET_PLACEMENT_NODE_SCORE_H_

#include <algorithm>
#include <cstdint>

#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

// What a pod adds to a node, worked out once per pod instead of once per node.
struct PodDemand {
  bool gpu = false;            // scored on GPU core and memory (else on cpu and memory)
  int count = 0;
  int64_t core = 0;            // per device, percent
  int64_t memory_percent = 0;  // per device, of the node's average GPU memory; 0: use bytes
  int64_t memory_bytes = 0;    // per device
  int64_t cpu_milli = 0;
  int64_t node_memory_bytes = 0;

  explicit PodDemand(const Pod& pod);
};

// In [0, 1]. GPU pods (on nodes with GPUs) are scored on GPU core and memory; other pods on cpu
// and memory. Inline so that a batch over many nodes (Placer::Place) computes exactly the
// same doubles as a single call.
inline double AllocatedFractionAfter(const NodeUsage& u, const PodDemand& d) {
  auto fraction = [](int64_t used, int64_t extra, int64_t capacity) {
    if (capacity <= 0) return 0.0;
    return std::min(1.0, static_cast<double>(used + extra) / static_cast<double>(capacity));
  };
  if (d.gpu && u.gpu_count > 0) {
    const int64_t core = d.core * d.count;
    const int64_t memory = d.memory_percent > 0
                               ? d.memory_percent * u.gpu_memory_average / 100 * d.count
                               : d.memory_bytes * d.count;
    return 0.5 * (fraction(u.gpu_core_used, core, u.gpu_core_capacity) +
                  fraction(u.gpu_memory_used, memory, u.gpu_memory_capacity));
  }
  return 0.5 * (fraction(u.cpu_used, d.cpu_milli, u.cpu_capacity) +
                fraction(u.memory_used, d.node_memory_bytes, u.memory_capacity));
}

inline double AllocatedFractionAfter(const NodeView& v, const Pod& pod) {
  return AllocatedFractionAfter(*v.usage, PodDemand(pod));
}

// The two node scores over that fraction, in [0, 100].
inline double MostAllocatedScore(double fraction) { return 100.0 * fraction; }
inline double LeastAllocatedScore(double fraction) { return 100.0 * (1.0 - fraction); }

// Base of the strategies that score nodes by allocation alone (binpack and topology: most
// allocated, spread: least allocated). The score is defined here once from the sign, so
// ScoreNode and Placer::Place's batch loop (which reads AllocationScoreSign) agree.
class AllocationScoredStrategy : public PlacementStrategy {
 public:
  explicit AllocationScoredStrategy(int sign) : sign_(sign > 0 ? 1 : -1) {}
  double ScoreNode(const NodeView& node, const Pod& pod,
                   absl::Span<const DeviceGrant>) const final {
    const double f = AllocatedFractionAfter(node, pod);
    return sign_ > 0 ? MostAllocatedScore(f) : LeastAllocatedScore(f);
  }
  int AllocationScoreSign() const final { return sign_; }

 private:
  int sign_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NODE_SCORE_H_
