// A pod as the scheduler sees it: cpu/memory, normalised device requests and placement constraints.
#ifndef GPUFLEET_CORE_POD_H_
#define GPUFLEET_CORE_POD_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpufleet {

// One device type's need, whatever vocabulary the pod used: `count` devices, each giving `core`
// percent and either `memory_bytes` or `memory_ratio` percent of its memory (a ratio becomes bytes
// on the chosen device, so 50% of an 80Gi card and of a 16Gi card are different bytes).
struct DeviceRequest {
  std::string type;
  int count = 0;
  int64_t core = 0;
  int64_t memory_bytes = 0;
  int64_t memory_ratio = 0;
  // A whole device: 100% core and 100% memory. Whole requests take untouched devices only.
  bool whole() const { return core >= 100 && memory_ratio >= 100; }
  bool operator==(const DeviceRequest&) const = default;
};

// All chosen devices of a multi-device request must lie in one such domain.
enum class TopologyScope { kNone = 0, kPcie = 1, kNuma = 2 };

struct Toleration {
  std::string key;
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;        // empty matches every effect
  bool operator==(const Toleration&) const = default;
};

struct Pod {
  std::string name;          // unique key, usually "namespace/name"
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::vector<DeviceRequest> devices;  // at most one entry per type, sorted by type
  TopologyScope scope = TopologyScope::kNone;
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::vector<std::string> gpu_models;  // allowed GPU models; empty means any
  int priority = 0;

  // On the hot path of every filter and score: compares sizes before bytes, no temporaries.
  const DeviceRequest* Find(std::string_view type) const {
    for (const auto& r : devices)
      if (std::string_view(r.type) == type) return &r;
    return nullptr;
  }
  // Whole-GPU equivalents: a 50% shared GPU counts 0.5 (used by fairness and metrics).
  double GpuShare() const {
    const DeviceRequest* g = Find("gpu");
    if (g == nullptr) return 0.0;
    int64_t pct = g->core > 0 ? g->core : g->memory_ratio;
    return g->count * (pct > 0 ? pct / 100.0 : 1.0);
  }
  bool operator==(const Pod&) const = default;
};

const char* TopologyScopeName(TopologyScope scope);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_POD_H_
