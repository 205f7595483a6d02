// The jobtime action's memory across cycles: one jobtime::Job per whole-GPU engine job (by name),
// the running list and the GPUs in use per model, kept exactly as the simulator keeps them (same
// counter updates, same running-list order, same validation of a plan), so that a JobTimePolicy
// reading a JobTimeView sees in the engine what it would see in the simulator at the same times.
// Jobs are never removed: a finished job keeps its index (policies index their state by it).
#ifndef GPUFLEET_ENGINE_JOBTIME_LEDGER_H_
#define GPUFLEET_ENGINE_JOBTIME_LEDGER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gpufleet/policies/gpu_pool.h"
#include "gpufleet/policies/job.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::engine {

class JobtimeLedger {
 public:
  JobtimeLedger();

  // The view a policy reads; `pool` must outlive the next policy call.
  const jobtime::JobTimeView& view() const { return view_; }
  void SetTime(double now) { view_.now = now; }
  void SetSeed(uint64_t seed) { view_.seed = seed; }
  void SetPool(const jobtime::GpuPool* pool);
  double now() const { return view_.now; }

  int size() const { return static_cast<int>(jobs_.size()); }
  int Find(const std::string& name) const;  // -1 when unknown or finished
  const std::string& name(int i) const { return names_[i]; }
  jobtime::Job& job(int i) { return jobs_[i]; }
  const jobtime::Job& job(int i) const { return jobs_[i]; }
  const std::vector<int>& running() const { return running_; }
  const std::vector<int>& busy() const { return busy_; }
  // Grows the per-model counters when the cluster shows a new model.
  void SetNumModels(int n);

  // A new job, pending from now (index = arrival order).
  int Add(const std::string& name, jobtime::JobSpec spec);
  // As the simulator's state changes: counters brought up to now first.
  void Start(int i, int model);
  void Preempt(int i);
  void Migrate(int i, int model);
  void Finish(int i);
  // A migration whose new placement failed: the job ends up preempted instead.
  void UndoMigration(int i);

  // The simulator's checks on a plan (range, active, once, a model it can run on, no model
  // over-committed given `keep_unlisted`); the error names the job and the model.
  absl::Status Validate(const std::vector<jobtime::Assignment>& plan, bool keep_unlisted);

 private:
  void Advance(jobtime::Job& j);
  void AddRunning(int i, int model);
  void RemoveRunning(int i);

  std::vector<jobtime::Job> jobs_;
  std::vector<std::string> names_;
  std::vector<int> planned_, used_;  // CheckPlan's scratch
  absl::flat_hash_map<std::string, int> index_;  // active jobs only
  std::vector<int> running_;
  std::vector<int> busy_;
  jobtime::JobTimeView view_;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_JOBTIME_LEDGER_H_
