#include "gpufleet/placement/node_score.h"

#include "gpufleet/core/device.h"

namespace gpufleet {

PodDemand::PodDemand(const Pod& pod) : cpu_milli(pod.cpu_milli), node_memory_bytes(pod.memory_bytes) {
  const DeviceRequest* g = pod.Find(kGpu);
  if (g == nullptr) return;
  gpu = true;
  count = g->count;
  core = g->whole() ? 100 : g->core;
  memory_percent = g->whole() ? 100 : g->memory_ratio;
  memory_bytes = g->memory_bytes;
}

}  // namespace gpufleet
