// Job-time policies: which jobs hold GPUs of which model between two scheduling points. The
// simulator (mechanism) owns time, progress, events and accounting; a policy (registered by name)
// answers one question on each scheduling point: the set of (job, model) assignments to run now.
// Running jobs left out are preempted, a changed model is a migration. Policies keep their own
// per-job state (queues, reset counters) through the OnArrival/OnFinish hooks.
#ifndef GPUFLEET_SIM_POLICY_H_
#define GPUFLEET_SIM_POLICY_H_

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/sim/gpu_pool.h"
#include "gpufleet/sim/job.h"

namespace gpufleet::sim {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

// What a policy may read on a scheduling point.
struct SimView {
  const std::vector<Job>* jobs = nullptr;
  const GpuPool* pool = nullptr;
  const std::vector<int>* running = nullptr;  // job indices, no particular order
  double now = 0;
  bool tiresias_compat = false;
  double restore_delay = 0;  // the simulator's checkpoint/restore delay, for cost-aware moves

  const Job& job(int i) const { return (*jobs)[i]; }
};

struct Assignment {
  int job;
  int model;
};

class Policy {
 public:
  static constexpr char kKind[] = "policy";
  virtual ~Policy() = default;

  // Called once before the run with every job (state kFuture).
  virtual absl::Status Init(const SimView& view) { return absl::OkStatus(); }
  virtual void OnArrival(int job, const SimView& view) {}
  virtual void OnFinish(int job, const SimView& view) {}
  // Appends the assignments to run from now on; models must not be over-committed.
  virtual void Schedule(const SimView& view, std::vector<Assignment>* plan) = 0;
  // Next time the policy wants a scheduling point without any event (queue demotion, round end).
  virtual double NextWakeup(const SimView& view) const { return kNever; }
};

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& spec);
std::vector<std::string> PolicyNames();
std::string PolicyDescription(const std::string& name);

// How a policy picks the model for a job that needs one.
enum class ModelChoice {
  kFirstFit,  // heterogeneity-agnostic: first model in cluster order with room
  kFastest,   // heterogeneity-aware: the model where the job runs fastest
};

// Greedy filling helper shared by the policies: tracks free GPUs per model while a plan is built.
class Filler {
 public:
  Filler(const SimView& view, std::vector<Assignment>* plan);
  // Places `job` if it fits: a running job keeps its model when that model still has room.
  // Returns the model, or -1 (nothing changes).
  int TryPlace(int job, ModelChoice choice);
  // The model `choice` would give `job` now, or -1.
  int PickModel(int job, ModelChoice choice) const;
  bool Fits(int job, int model) const;
  int free(int model) const { return free_[model]; }
  int total_free() const { return total_free_; }
  void Take(int job, int model);  // unchecked: callers check Fits first
  // Gives back the GPUs of `job` on `model`; the caller removes its plan entry.
  void Release(int job, int model);

 private:
  const SimView& view_;
  std::vector<Assignment>* plan_;
  std::vector<int> free_;
  int total_free_ = 0;
};

// Re-assigns the models of a plan so that running jobs keep the model they have: the jobs chosen
// stay the same, the running ones are placed first on their current model and the others by
// `choice`. A greedy fill in priority order can otherwise bump a running job to another model
// (a needless migration) when a higher-priority job took its model while others had room. Keeps
// the plan as it is when the re-assignment does not fit.
void KeepModels(const SimView& view, ModelChoice choice, std::vector<Assignment>* plan);

}  // namespace gpufleet::sim

#endif  // GPUFLEET_SIM_POLICY_H_
