// Job-time policies: which jobs hold GPUs of which model between two scheduling points. A host
// (the simulator's event loop, or the engine's jobtime action) owns time, progress, events and
// accounting; a policy (registered by name) answers one question on each scheduling point: the
// set of (job, model) assignments to run now.
// Running jobs left out are preempted, a changed model is a migration. Policies keep their own
// per-job state (queues, reset counters) through the OnArrival/OnFinish hooks.
#ifndef GPUFLEET_POLICIES_JOB_TIME_POLICY_H_
#define GPUFLEET_POLICIES_JOB_TIME_POLICY_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/policies/gavel_compat.h"
#include "gpufleet/policies/gpu_pool.h"
#include "gpufleet/policies/job.h"

namespace gpufleet::jobtime {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

// What a policy may read on a scheduling point. The host brings a running job's counters up
// to date only when its state changes (so an event does not cost O(running jobs)); read a job's
// progress through the accessors below, which add the time since then.
struct JobTimeView {
  const std::vector<Job>* jobs = nullptr;
  const GpuPool* pool = nullptr;
  const std::vector<int>* running = nullptr;  // job indices, no particular order
  const std::vector<int>* busy = nullptr;     // GPUs in use per model
  double now = 0;
  // Seeds the heterogeneity-agnostic model draw (ModelChoice::kAgnostic): the simulator's and
  // the jobtime action's `seed`.
  uint64_t seed = 0;
  bool tiresias_compat = false;
  double restore_delay = 0;  // the host's checkpoint/restore delay, for cost-aware moves
  // True when the host applies every plan exactly and changes jobs only through plans, arrivals
  // and finishes (the simulator): a policy may then keep what it derived from jobs between
  // points. False (the engine, where other actions and updates move jobs too): re-read them.
  bool exact_host = false;
  // Set by the simulator's Gavel-compatible mode (its rounds of micro-tasks); null otherwise.
  const GavelCompat* gavel = nullptr;
  // In that mode: every job has arrived and no micro-task ran in the round that just ended (Gavel
  // then allows a re-solve at once).
  bool gavel_idle_after_last_arrival = false;

  const Job& job(int i) const { return (*jobs)[i]; }
  // Seconds since the job's counters were last brought up to date (0 unless running).
  double Elapsed(int i) const {
    const Job& j = job(i);
    return j.state == JobState::kRunning ? now - j.last_update : 0;
  }
  double RunTime(int i) const { return job(i).run_time + Elapsed(i); }
  double GpuTime(int i) const { return job(i).gpu_time + Elapsed(i) * job(i).spec.num_gpu; }
  double Service(int i) const {
    const Job& j = job(i);
    double e = Elapsed(i);
    return e > 0 ? j.service + e * j.spec.num_gpu * pool->model(j.model).perf_factor : j.service;
  }
  double WorkDone(int i) const {
    const Job& j = job(i);
    if (j.state != JobState::kRunning) return j.work_done;
    double from = j.last_update > j.stall_until ? j.last_update : j.stall_until;
    double w = j.work_done + (now > from ? (now - from) * j.Speed(j.model) : 0);
    return w < j.spec.duration ? w : j.spec.duration;
  }
  double RemainingWork(int i) const { return job(i).spec.duration - WorkDone(i); }
};

struct Assignment {
  int job;
  int model;  // kStop: in a plan of changes only, preempt this running job
  // Gavel's packing (GavelCompat's co-located rates): a second job sharing `job`'s GPUs, with the
  // same GPU count; the pair's GPUs count once. -1: none.
  int partner = -1;
};
inline constexpr int kStop = -1;

struct PolicyTraits {
  bool needs_durations = false;  // reads the jobs' durations (an oracle)
  bool preemptive = false;       // may leave a running job out of a plan (preempt it)
  Json ToJson() const;
};

class JobTimePolicy : public Registrant<PolicyTraits> {
 public:
  static constexpr char kKind[] = "policy";

  // Called once before the run with every job (state kFuture).
  virtual absl::Status Init(const JobTimeView& view) { return absl::OkStatus(); }
  virtual void OnArrival(int job, const JobTimeView& view) {}
  virtual void OnFinish(int job, const JobTimeView& view) {}
  // Appends the assignments to run from now on; models must not be over-committed.
  virtual void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) = 0;
  // Next time the policy wants a scheduling point without any event (queue demotion, round end).
  virtual double NextWakeup(const JobTimeView& view) const { return kNever; }

  // The Gavel-compatible mode's rounds (JobTimeView::gavel): seconds a micro-task may last; 0 for
  // a policy that does not run in those rounds (the simulator then refuses the mode).
  virtual double MicroTaskSeconds() const { return 0; }
  // In that mode, once per micro-task of the round just ended, latest finish first, before the
  // job's OnFinish: it held `model` and is charged `charged` seconds; a failed one made no progress.
  virtual void OnMicroTask(int job, int model, double charged, bool succeeded,
                           const JobTimeView& view) {}
  // The same for a packed pair's micro-task (an Assignment with a partner): charged once to the
  // pair, before either job's OnFinish.
  virtual void OnPairMicroTask(int job, int partner, int model, double charged, bool succeeded,
                               const JobTimeView& view) {}

  // True (once) when the last plan listed only changes: running jobs it leaves out keep running
  // on their model instead of being preempted. Lets a policy answer an event in O(changes).
  bool TakeKeepUnlisted() {
    bool k = keep_unlisted_;
    keep_unlisted_ = false;
    return k;
  }

 protected:
  void KeepUnlistedRunning() { keep_unlisted_ = true; }

 private:
  bool keep_unlisted_ = false;
};

absl::StatusOr<std::unique_ptr<JobTimePolicy>> MakeJobTimePolicy(const std::string& spec);

// How a policy picks the model for a job that needs one.
enum class ModelChoice {
  // Heterogeneity-agnostic: a model with room drawn at random, each with probability
  // proportional to its free GPUs, as a scheduler that does not tell models apart lands on a
  // mixed cluster. The draw is a function of (view.seed, job, view.now) over the models in name
  // order, so it is reproducible and the order the cluster lists its models cannot change it.
  kAgnostic,
  kFastest,   // heterogeneity-aware: the model where the job runs fastest (ties drawn as above)
  // Like kFastest, but a running job is not held to its current model (round-based policies
  // that re-plan every model each round).
  kFastestMove,
  // Like kAgnostic, but a running job is drawn afresh too: it moves between models from round to
  // round as a round-based agnostic scheduler's jobs do.
  kAgnosticMove,
};

// Greedy filling helper shared by the policies: tracks free GPUs per model while a plan is built.
class Filler {
 public:
  // Starts from every GPU free (a full plan) or, with `from_current`, from the GPUs the running
  // jobs leave free (a plan of changes, see JobTimePolicy::KeepUnlistedRunning).
  Filler(const JobTimeView& view, std::vector<Assignment>* plan, bool from_current = false);
  // Places `job` if it fits: a running job keeps its model when that model still has room
  // (except with kFastestMove).
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
  // Counts GPUs of `model` as taken (or given back) by running jobs the plan does not list:
  // a plan of changes keeps them where they are.
  void TakeGpus(int model, int gpus) { AddFree(model, -gpus); }
  void ReleaseGpus(int model, int gpus) { AddFree(model, gpus); }

 private:
  // Among the models where `job` fits and `eligible(model)` holds, one drawn with probability
  // proportional to its free GPUs (see ModelChoice::kAgnostic); -1 when there is none.
  template <typename Pred>
  int DrawByFree(int job, Pred eligible) const;
  void AddFree(int model, int gpus) {
    free_[model] += gpus;
    total_free_ += gpus;
  }

  const JobTimeView& view_;
  std::vector<Assignment>* plan_;
  std::vector<int> free_;
  int total_free_ = 0;
};

// The checks every plan passes before it applies, in the simulator and in the engine's jobtime
// action: assignments in range, to active jobs, each job once, on a model it can run on, and no
// model over-committed (with `keep_unlisted`, running jobs left out keep their GPUs, and a
// running job listed with kStop gives its GPUs back; a kStop entry stays -1 in `planned`). A
// packed pair (a partner, full plans only) needs two distinct jobs with the same GPU count that
// both can run on the model; its GPUs count once. On success
// `planned` (per job, -1 = not listed; the caller sizes it and resets the listed entries after
// use) holds each listed job's model; on error it is left as it was. `used` is scratch. Errors
// name a job through `label`.
absl::Status CheckPlan(const std::vector<Assignment>& plan, const std::vector<Job>& jobs,
                       const GpuPool& pool, const std::vector<int>& busy, bool keep_unlisted,
                       const std::function<std::string(int)>& label, std::vector<int>* planned,
                       std::vector<int>* used);

// Re-assigns the models of a plan so that running jobs keep the model they have: the jobs chosen
// stay the same, the running ones are placed first on their current model and the others by
// `choice`. A greedy fill in priority order can otherwise bump a running job to another model
// (a needless migration) when a higher-priority job took its model while others had room. Keeps
// the plan as it is when the re-assignment does not fit.
void KeepModels(const JobTimeView& view, ModelChoice choice, std::vector<Assignment>* plan);

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_JOB_TIME_POLICY_H_
