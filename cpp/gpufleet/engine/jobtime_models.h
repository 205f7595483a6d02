// The GPU models of the engine's cluster as job-time policies see them: one jobtime::GpuPool entry
// per model, in order of first appearance over the nodes. A model keeps its index once given (the
// ledger's jobs and their speeds refer to it), so models are only ever appended; a model whose
// nodes left counts 0. Names compare case-insensitively, as jobtime::GpuPool does.
#ifndef GPUFLEET_ENGINE_JOBTIME_MODELS_H_
#define GPUFLEET_ENGINE_JOBTIME_MODELS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/policies/gpu_pool.h"

namespace gpufleet::engine {

class JobtimeModels {
 public:
  // `perf_factors`: model -> factor (any case); models not listed get jobtime::DefaultPerfFactor.
  explicit JobtimeModels(std::map<std::string, double> perf_factors);

  // Reads the cluster: appends models seen for the first time and counts, per model, the healthy
  // GPUs that nothing holds. Returns true when models were appended.
  bool Refresh(const ClusterState& state);
  int num_models() const { return static_cast<int>(names_.size()); }
  const std::string& name(int m) const { return names_[m]; }
  // Index by name, any case; -1 when the cluster never showed it.
  int Find(const std::string& model) const;
  // The spellings devices use for model `m` (what a pod's gpu_models must list).
  const std::vector<std::string>& spellings(int m) const { return spellings_[m]; }
  int free(int m) const { return free_[m]; }
  int healthy(int m) const { return healthy_[m]; }
  // The pool with `counts[m]` GPUs of each model (at least one GPU in all).
  absl::StatusOr<jobtime::GpuPool> Pool(const std::vector<int>& counts) const;
  // The model of the first GPU an allocation holds, or -1.
  int ModelOf(const ClusterState& state, const Allocation& a) const;

 private:
  int Intern(const std::string& model);

  std::map<std::string, double> perf_factors_;  // lower-case keys
  std::vector<std::string> names_;               // as first seen ("" shows as "(no model)")
  std::vector<std::vector<std::string>> spellings_;
  std::map<std::string, int> index_;  // lower-case name -> index
  std::vector<int> free_;
  std::vector<int> healthy_;
  std::vector<double> memory_gib_;  // smallest GPU of the model now in the cluster; 0 = none
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_JOBTIME_MODELS_H_
