// Discrete-event job-time simulator. Events: job arrival, job completion, the policy's own wake-up
// (queue demotion, round end) and an optional periodic tick. On each event time the simulator
// advances every running job's progress, retires finished jobs, admits arrivals, asks the policy
// for the assignments to run and applies the difference (start, preempt, migrate) with an optional
// checkpoint/restore delay. Completion times sit in a heap with lazy invalidation, so an event
// costs O(running jobs + policy), not O(all jobs).
#ifndef GPUFLEET_SIM_SIMULATOR_H_
#define GPUFLEET_SIM_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/policies/gpu_pool.h"
#include "gpufleet/policies/job.h"
#include "gpufleet/sim/metrics.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::sim {

// The shortest positive `tick` and `scheduling_interval`, in seconds: a shorter one schedules so
// often that a run never ends (a tick of 1e-300 s is 1e300 scheduling points per second of trace).
inline constexpr double kMinSchedulingStep = 1e-3;

struct SimOptions {
  // Reproduce Tiresias' simulator (NSDI'19 artifact): whole-second finish times and its
  // queue-jump arithmetic in dlas-gpu. See docs/simulator.md.
  bool tiresias_compat = false;
  // Reproduce Gavel's simulator (OSDI'20 artifact): its rounds of micro-tasks, counted in steps
  // (sim/gavel_rounds.h), for the policies that run in them; which of its bugs to keep.
  jobtime::GavelCompat gavel;
  double restore_delay = 0;      // s without progress after a resume or a migration
  double tick = 0;               // > 0: also schedule every `tick` (>= kMinSchedulingStep) seconds
  // > 0: schedule only on multiples of this many seconds (arrivals wait and freed GPUs idle
  // until the next one), instead of on every arrival and completion. Large runs use it to
  // trade a bounded scheduling latency for far fewer scheduling points.
  double scheduling_interval = 0;
  bool record_timeseries = true; // one sample per scheduling point
  // A registered placement strategy that gives every start real devices in a ClusterState (one
  // node per `gpus_per_node` GPUs of a model; see DeviceLedger). Empty: GPU counts only, which
  // skips the device bookkeeping (the timing is the same either way; only where jobs run and
  // `max_nodes` differ).
  std::string placement = "binpack";
  // Racks of each model's nodes (sim/device_ledger.h): a job spanning nodes then prefers one
  // rack, then one block. 0 nodes per rack: no racks.
  int nodes_per_rack = 0;
  int racks_per_block = 0;
  // Seeds the heterogeneity-agnostic policies' model draw (JobTimeView::seed).
  uint64_t seed = 0;
  // Called every `progress_every` scheduling points with the number of finished jobs.
  std::function<void(int64_t finished)> progress;
  int64_t progress_every = 1 << 14;
};

struct TimeSample {
  double time;
  int running_jobs;
  int pending_jobs;
  int busy_gpus;
};

struct SimResult {
  std::vector<jobtime::Job> jobs;  // final state, in input order
  std::vector<TimeSample> timeseries;
  int64_t scheduling_points = 0;
  Summary summary;
  // Pods (named "job-index.piece") still holding devices at the end: none after a complete run.
  int leftover_allocations = 0;
};

// Validates the jobs against the pool (every job must fit on some model) and runs to the end.
absl::StatusOr<SimResult> Simulate(const jobtime::GpuPool& pool,
                                   std::vector<jobtime::JobSpec> jobs,
                                   jobtime::JobTimePolicy& policy,
                                   const SimOptions& options);

// The same run over jobs given whole: only their specs are read (every other field starts from a
// default Job). For the largest inputs: the simulator keeps these records instead of building a
// second copy of the specs, so memory holds one record per job.
absl::StatusOr<SimResult> Simulate(const jobtime::GpuPool& pool, std::vector<jobtime::Job> jobs,
                                   jobtime::JobTimePolicy& policy, const SimOptions& options);

}  // namespace gpufleet::sim

#endif  // GPUFLEET_SIM_SIMULATOR_H_
