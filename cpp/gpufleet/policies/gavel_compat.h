// The simulator's Gavel-compatible mode (sim::SimOptions::gavel, docs/simulator.md "Gavel-compatible
// mode"): what a policy needs to know of it, and which of the bugs of Gavel's simulator (Narayanan
// et al., OSDI 2020; github.com/stanford-futuredata/gavel, scheduler/) it reproduces.
#ifndef GPUFLEET_POLICIES_GAVEL_COMPAT_H_
#define GPUFLEET_POLICIES_GAVEL_COMPAT_H_

#include <vector>

namespace gpufleet::jobtime {

struct GavelCompat {
  bool enabled = false;
  // A k-GPU job left with 0 < steps < k fails every micro-task (each of its first k-1 workers is
  // given steps // k = 0 steps) and is dropped, with no completion time, after
  // `max_failed_attempts` failures. false: such a job ends with its last steps.
  bool drop_stuck_jobs = true;
  int max_failed_attempts = 5;
  // A round's micro-tasks are charged the time since the previous busy round ended, so the first
  // ones after an idle gap are charged the gap too (this only moves priorities). false: since the
  // round began.
  bool charge_idle_gaps = true;
  // Gavel's heterogeneity-agnostic fifo puts every job on the last type of its list of types with
  // free GPUs (a loop variable used after its loop) instead of the random one it draws, beyond
  // that type's capacity. false: the drawn type.
  bool fifo_stale_type = true;
  // Index of the model whose throughput the agnostic finish-time-fairness and min-total-duration
  // policies give every model (Gavel hard-codes v100); -1 when the cluster has none.
  int reference_model = -1;
  // Co-located throughputs, for the packing policies (two jobs sharing one set of GPUs). Per job
  // (by index in the run's job list; empty: none) its type, -1 for a job never packed; and per
  // (type a, type b, model m), at pair_rate[(a * types + b) * models + m], the steps/s of a job
  // of type a sharing its GPUs of model m with one of type b (0: they cannot share them). Gavel
  // pairs only jobs with the same scale factor, so the table has no rates for other pairs.
  std::vector<int> job_type;
  int types = 0;
  std::vector<double> pair_rate;

  // Whether jobs `a` and `b` (indices) have co-located rates at all.
  bool Packable(int a, int b) const {
    return a >= 0 && b >= 0 && a < static_cast<int>(job_type.size()) &&
           b < static_cast<int>(job_type.size()) && job_type[a] >= 0 && job_type[b] >= 0;
  }
  // Steps/s of job `a` on model `m` while sharing its GPUs with job `b` (Packable(a, b)).
  double PairRate(int a, int b, int m, int models) const {
    return pair_rate[(static_cast<size_t>(job_type[a]) * types + job_type[b]) * models + m];
  }
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_GAVEL_COMPAT_H_
