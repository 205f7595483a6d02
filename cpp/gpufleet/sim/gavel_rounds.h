// The simulator's Gavel-compatible mode (SimOptions::gavel): the event loop of Gavel's simulator
// (Narayanan et al., OSDI 2020; github.com/stanford-futuredata/gavel, scheduler/scheduler.py,
// `simulate`) for the policies that run in its rounds (JobTimePolicy::MicroTaskSeconds() > 0).
//  - Work is counted in steps: a job's `duration` is its total steps and `speed[m]` its steps/s on
//    model m (gpufleet.sim.simulate converts a Gavel trace so when gavel_compat is set).
//  - A round dispatches one micro-task per job the policy lists: min(int(rate x round), steps
//    left) steps, lasting steps / rate. The round ends when its longest micro-task ends; a job
//    ending earlier keeps its exact end time but its GPUs idle until the round ends.
//  - Arrivals join at round boundaries; with nothing running, time jumps to the next arrival.
//  - Micro-tasks complete latest finish first (OnMicroTask, then OnFinish for a job done or
//    dropped); a k-GPU micro-task whose steps split over k workers leaves one with none fails, and
//    a job failing GavelCompat::max_failed_attempts times in a row is dropped (GavelCompat).
//  - Packing (GavelCompat's co-located rates; a plan entry with a partner): both jobs run on one
//    set of GPUs, each at its co-located rate; the pair's micro-task ends with the later of the
//    two, both jobs ending in it end then, its GPUs count once, its time is charged once
//    (OnPairMicroTask), and a failed one counts against neither job.
//  - The makespan is the end of the last round (Gavel's "Total duration"). No devices are placed.
#ifndef GPUFLEET_SIM_GAVEL_ROUNDS_H_
#define GPUFLEET_SIM_GAVEL_ROUNDS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/policies/job.h"
#include "gpufleet/policies/job_time_policy.h"
#include "gpufleet/sim/simulator.h"

namespace gpufleet::sim {

// Runs `jobs` (validated by Simulate) in Gavel's rounds. InvalidArgument when the policy does not
// run in rounds; FailedPrecondition when the policy leaves jobs that can never run (Gavel's own
// simulator loops forever there).
absl::StatusOr<SimResult> SimulateGavelRounds(const jobtime::GpuPool& pool,
                                              std::vector<jobtime::Job> jobs,
                                              jobtime::JobTimePolicy& policy,
                                              const SimOptions& options);

}  // namespace gpufleet::sim

#endif  // GPUFLEET_SIM_GAVEL_ROUNDS_H_
