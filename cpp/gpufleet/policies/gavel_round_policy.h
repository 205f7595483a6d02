// Gavel's policy family (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for
// Deep Learning Workloads", OSDI 2020): a policy computes an allocation X[job][model] (the fraction
// of time a job should hold GPUs of each model), and a round-based mechanism realises it. This base
// holds the mechanism; each policy (gavel_lp.cc, gavel_ftf.cc, gavel_makespan.cc,
// gavel_throughput.cc, gavel_fifo.cc) only supplies Allocate.
//
// Two mechanisms:
//  - gpufleet's (the simulator's default mode): rounds of round_duration seconds; the allocation is
//    recomputed at a round boundary after an arrival or a completion; each round serves (job,
//    model) pairs in decreasing order of X / the fraction of its time in the system the job has
//    had on that model, each job once, then back-fills the GPUs left with any job that fits (FIFO
//    excepted); a job finishing mid-round frees its GPUs at once.
//  - Gavel's (JobTimeView::gavel, the Gavel-compatible mode; docs/simulator.md lists its rules):
//    a re-solve only at a boundary after an arrival, completion or failed micro-task and at least
//    1,920 s after the previous one; per model, priority X / (the job's share of the time charged
//    to that model since the last re-solve, each job starting from half a round); jobs chosen
//    model by model in Gavel's order (v100, p100, k80: descending name), each model's list sorted
//    by (priority, deficit, X); jobs that arrived since the last solve hold GPUs but do not run.
//    With packing (Options::packing, Gavel's *_packed policies), each pair of jobs with the same
//    GPU count is an entry too, with its own X, charged time and deficit (docs/simulator.md,
//    "Packing").
//
// Heterogeneity-agnostic variants (aware=false) solve the same LP with every model looking the
// same (each policy says which rate it gives every model) and take the centre of its optimal face,
// which spreads every job over the models, so jobs move between models from round to round as
// Gavel's do (in Gavel's mode, the order of the models is also shuffled every round, with Python's
// generator seeded by seed + 5). sticky=true is gpufleet's older agnostic baseline: one pooled LP
// column, each share realised on a model drawn in proportion to free GPUs, where a running job
// stays while its model has room.
#ifndef GPUFLEET_POLICIES_GAVEL_ROUND_POLICY_H_
#define GPUFLEET_POLICIES_GAVEL_ROUND_POLICY_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/policies/job_time_policy.h"
#include "gpufleet/policies/python_random.h"

namespace gpufleet::jobtime {

// One active job as an allocation sees it.
struct AllocationJob {
  int job = 0;                // index in JobTimeView::jobs
  int gpus = 1;               // GPUs it needs (Gavel's scale factor)
  std::vector<double> rate;   // per column: work per second there (0: it cannot run there)
  double remaining = 0;       // work left
  double age = 0;             // seconds since it arrived
};

// Two jobs sharing one set of GPUs (Gavel's packing): a variable of its own in the allocation,
// its GPUs counted once, each job's time share including the pairs it is in.
struct AllocationPair {
  int a = 0, b = 0;             // rows of AllocationInput::jobs, a < b, the same GPU count
  std::vector<double> rate_a;   // per column: a's work per second while sharing with b
  std::vector<double> rate_b;   // and b's
};

struct AllocationInput {
  std::vector<AllocationJob> jobs;  // by job index (Gavel: by job id)
  // Packing policies only: an allocation then has a row per pair after the jobs' rows.
  std::vector<AllocationPair> pairs;
  std::vector<int> capacity;        // GPUs per column
  bool aware = true;                // rates are the models' own (false: every model looks alike)
  // Gavel's own formulation and the centre of the optimal face (the Gavel-compatible mode);
  // otherwise the policy's default formulation and any optimum the solver gives.
  bool gavel = false;
  bool centred = false;             // take the centre of the optimal face (lp_centre.h)
};

// X per input job (same order), then per input pair, per column; a job's row and the rows of the
// pairs it is in sum to at most 1.
using Allocation = std::vector<std::vector<double>>;

class GavelRoundPolicy : public JobTimePolicy {
 public:
  struct Options {
    double round = 360;   // seconds per round (Gavel's time_per_iteration)
    bool aware = true;
    bool sticky = false;  // agnostic only: the pooled, stay-where-it-landed baseline
    // Gavel's packing (its *_packed policies): pairs of jobs with the same GPU count may share
    // GPUs at their co-located rates (GavelCompat::pair_rate); the Gavel-compatible mode only.
    bool packing = false;
  };
  explicit GavelRoundPolicy(Options options) : options_(options) {}

  absl::Status Init(const JobTimeView& view) override;
  void OnArrival(int job, const JobTimeView& view) override;
  void OnFinish(int job, const JobTimeView& view) override;
  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override;
  double NextWakeup(const JobTimeView& view) const override;
  double MicroTaskSeconds() const override { return options_.round; }
  void OnMicroTask(int job, int model, double charged, bool succeeded,
                   const JobTimeView& view) override;
  void OnPairMicroTask(int job, int partner, int model, double charged, bool succeeded,
                       const JobTimeView& view) override;

 protected:
  // The allocation for `in`; on an error the previous one stays.
  virtual absl::StatusOr<Allocation> Allocate(const AllocationInput& in) = 0;
  // What an agnostic variant shows the allocation for every model where the job can run.
  enum class AgnosticRate {
    kOne,        // 1 (max-min fairness)
    kReference,  // the job's rate on the reference model (finish-time fairness, min duration)
    kTrue,       // the real rates: the policy draws models itself (FIFO)
  };
  virtual AgnosticRate agnostic_rate() const { return AgnosticRate::kOne; }
  // Whether the default mode takes the centre of the optimal face (max-min's LP is solved every
  // round there, so it keeps CLP's vertex when aware).
  virtual bool CentredByDefault() const { return true; }
  // FIFO: only jobs with a positive priority run (no back-fill).
  virtual bool Fifo() const { return false; }
  const Options& options() const { return options_; }
  // The seed the run was given (Gavel's --seed), for policies with draws of their own.
  uint64_t seed() const { return seed_; }

 private:
  // The default mechanism.
  void ScheduleRounds(const JobTimeView& view, std::vector<Assignment>* plan);
  // Gavel's (the Gavel-compatible mode).
  void ScheduleGavel(const JobTimeView& view, std::vector<Assignment>* plan);
  // Builds the input over the active jobs (columns: models in name order, or one pooled column)
  // and stores the result in share_ by model; false when the allocation failed.
  bool Solve(const JobTimeView& view, bool gavel);
  void ResetTimeRunSoFar(const JobTimeView& view);
  void Grow(size_t jobs, int models);
  // Packing: the pairs `job` makes with the active jobs of its GPU count, as Gavel makes them.
  void AddPairs(int job, const JobTimeView& view);

  // A packed pair as Gavel keeps it: an entry of its own, with its own X, charged time (from 0,
  // not half a round) and deficit.
  struct Pair {
    int lo, hi;                      // job indices, lo < hi
    bool alive = true;               // false once either job left
    bool in_allocation = false;      // part of the last solve
    std::vector<double> share;       // per model: X
    std::vector<double> job_time;    // per model: charged since the last reset
    std::vector<double> deficit;     // per model
  };
  // The pair's co-located rate of job `of` (lo or hi) on model m.
  double PairRate(const JobTimeView& view, const Pair& p, int of, int m) const;

  Options options_;
  uint64_t seed_ = 0;
  std::vector<int> active_;                   // arrival order
  std::vector<std::vector<double>> share_;    // per job, per model (one entry when pooled): X
  std::vector<char> in_allocation_;           // per job: part of the last solve
  // Default mechanism.
  double next_round_ = 0;
  double last_point_ = 0;
  bool dirty_ = true;                         // arrivals or completions since the last solve
  std::vector<std::vector<double>> time_on_;  // per job, per model: seconds held so far
  // Gavel's mechanism.
  bool need_update_ = true;
  double last_reset_ = 0;
  std::vector<std::vector<double>> job_time_;  // per job, per model: charged since the last reset
  std::vector<std::vector<double>> deficit_;   // per job, per model
  std::vector<double> worker_time_;            // per model
  std::vector<int> gavel_order_;               // models in Gavel's order (v100, p100, k80)
  // Gavel's priority entries in insertion order: a job (>= 0) or a pair (-1 - its index in
  // pairs_); a job's entry comes before the pairs it makes on arrival.
  std::vector<int> entries_;
  std::vector<Pair> pairs_;                    // every pair made, in order
  std::vector<std::vector<int>> pairs_of_;     // per job: its pairs' indices
  std::unique_ptr<PythonRandom> shuffler_;
};

// The parameters every member of the family declares (round_duration, aware, sticky unless the
// policy has no pooled variant, packing where Gavel has a packed variant), and the options they
// give.
std::vector<ParamSpec> GavelRoundParams(bool sticky = true, bool packing = false);
absl::StatusOr<GavelRoundPolicy::Options> GavelRoundOptions(const Params& p);

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_GAVEL_ROUND_POLICY_H_
