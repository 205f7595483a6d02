#include "gpufleet/placement/node_score.h"

#include <algorithm>

namespace gpufleet {
namespace {
double Fraction(int64_t used, int64_t extra, int64_t capacity) {
  if (capacity <= 0) return 0.0;
  return std::min(1.0, static_cast<double>(used + extra) / static_cast<double>(capacity));
}
}  // namespace

double AllocatedFractionAfter(const NodeView& v, const Pod& pod) {
  const NodeUsage& u = *v.usage;
  const DeviceRequest* gpu = pod.Find("gpu");
  if (gpu != nullptr && u.gpu_count > 0) {
    int64_t core = gpu->whole() ? 100 * gpu->count : gpu->core * gpu->count;
    const int64_t avg_memory = u.gpu_memory_average;
    int64_t memory = gpu->whole() || gpu->memory_ratio > 0
                         ? (gpu->whole() ? 100 : gpu->memory_ratio) * avg_memory / 100 * gpu->count
                         : gpu->memory_bytes * gpu->count;
    return 0.5 * (Fraction(u.gpu_core_used, core, u.gpu_core_capacity) +
                  Fraction(u.gpu_memory_used, memory, u.gpu_memory_capacity));
  }
  return 0.5 * (Fraction(u.cpu_used, pod.cpu_milli, v.node->cpu_milli) +
                Fraction(u.memory_used, pod.memory_bytes, v.node->memory_bytes));
}

}  // namespace gpufleet
