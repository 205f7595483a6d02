// GPUs counted by model, on nodes of `gpus_per_node`: what job-time policies see of a cluster.
// Job-time policies (Tiresias' "count" placement, Gavel's per-type allocation) decide how many GPUs of which
// model a job holds; the host keeps one free counter per model for them, and (by default) a
// DeviceLedger that gives each start real devices in the foundation's ClusterState.
#ifndef GPUFLEET_POLICIES_GPU_POOL_H_
#define GPUFLEET_POLICIES_GPU_POOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"

namespace gpufleet::jobtime {

struct GpuModel {
  std::string name;
  int count = 0;
  double memory_gib = 0;     // per GPU; 0 = unknown (no memory check)
  double perf_factor = 1.0;  // per-model constant for attained service (hetero-las)
  int gpus_per_node = 8;     // the last node of a model holds the remainder
};

// The most GPUs a pool read from a cluster spec may have (the traces' bound,
// gpufleet.traces.limits.MAX_GPUS): the simulator allocates per GPU and per node, so a larger
// count (a typo such as 10**8) would exhaust memory before a job runs.
inline constexpr int64_t kMaxPoolGpus = int64_t{1} << 20;

class GpuPool {
 public:
  // From JSON: {"v100": 4, "k80": 4} or {"v100": {"count": 4, "memory_gib": 16,
  // "perf_factor": 1.0}, ...} (models in name order) or a list of such objects with a "name"
  // (models in list order). The order only numbers the models: no policy prefers a model for
  // being listed first (see name_order). At most kMaxPoolGpus GPUs in all.
  static absl::StatusOr<GpuPool> FromJson(const Json& spec);
  static absl::StatusOr<GpuPool> Create(std::vector<GpuModel> models);

  int num_models() const { return static_cast<int>(models_.size()); }
  const GpuModel& model(int m) const { return models_[m]; }
  int total_gpus() const { return total_; }
  int max_count() const { return max_count_; }
  // Model indices sorted by lower-case name: the order in which choices that must not depend on
  // how the cluster was listed (the agnostic model draw) walk the models.
  const std::vector<int>& name_order() const { return name_order_; }
  // Index of a model by name (case-insensitive), or -1.
  int Find(const std::string& name) const;

 private:
  std::vector<GpuModel> models_;
  std::vector<int> name_order_;
  int total_ = 0;
  int max_count_ = 0;
};

// Default per-model performance factors: FP32 peak of one GPU as the vendor lists it, relative to
// V100 SXM2 (15.7 TFLOPS): K80 one GK210 die 4.37, P100 SXM2 10.6, T4 8.1, A10 31.2,
// A100 19.5 TFLOPS. Models not listed get 1.0.
double DefaultPerfFactor(const std::string& model_name);

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_GPU_POOL_H_
