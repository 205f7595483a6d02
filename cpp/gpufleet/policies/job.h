// A job as job-time policies and their hosts (the simulator, the engine's jobtime action) see it:
// what the trace says (JobSpec) and what happened to it so far.
#ifndef GPUFLEET_POLICIES_JOB_H_
#define GPUFLEET_POLICIES_JOB_H_

#include <cstdint>
#include <vector>

namespace gpufleet::jobtime {

struct JobSpec {
  int64_t id = 0;
  double submit_time = 0;
  int num_gpu = 1;
  double duration = 0;  // seconds of exclusive run time on the reference model (the "work")
  // Per pool model: work-seconds done per second on that model (throughput / reference
  // throughput); 0 = cannot run there. Empty = 1.0 on every model.
  std::vector<double> speed;
  double memory_gib = 0;  // peak memory on one GPU; 0 = unknown
};

enum class JobState : uint8_t { kFuture, kPending, kRunning, kDone };

struct Job {
  JobSpec spec;
  JobState state = JobState::kFuture;
  bool dropped = false;       // removed unfinished (the Gavel-compatible mode's stuck jobs)
  int model = -1;             // model index while running
  double work_done = 0;       // reference seconds completed
  double run_time = 0;        // wall seconds holding GPUs (restore stalls included)
  double gpu_time = 0;        // run_time x GPUs
  double service = 0;         // gpu_time x the model's perf factor
  double last_update = 0;     // progress counted up to here
  double stall_until = 0;     // checkpoint restore: no progress before this time
  double wait_since = 0;      // when it last became pending
  double queueing_delay = 0;  // total pending time
  double first_start = -1;
  double end_time = -1;
  int preemptions = 0;
  int migrations = 0;
  int max_nodes = 0;          // most nodes its GPUs spanned in one start (device ledger only)
  uint32_t version = 0;       // bumps when its finish time changes (lazy heap entries)
  int running_pos = -1;       // index in the host's running list

  double Speed(int m) const { return spec.speed.empty() ? 1.0 : spec.speed[m]; }
  double RemainingWork() const { return spec.duration - work_done; }
  bool CanRunOn(int m) const { return Speed(m) > 0; }
};

// Brings a running job's counters up to `now` on a GPU model with `perf_factor`: work done (none
// before `stall_until`, a restore), run time, GPU time and attained service. The one definition
// of attained service, shared by the simulator and the engine's jobtime ledger, so a policy sees
// the same numbers in both.
inline void AdvanceJob(Job& j, double now, double perf_factor) {
  const double elapsed = now - j.last_update;
  if (elapsed <= 0) return;
  const double progress_from = j.last_update > j.stall_until ? j.last_update : j.stall_until;
  if (now > progress_from) j.work_done += (now - progress_from) * j.Speed(j.model);
  if (j.work_done > j.spec.duration) j.work_done = j.spec.duration;
  j.run_time += elapsed;
  j.gpu_time += elapsed * j.spec.num_gpu;
  j.service += elapsed * j.spec.num_gpu * perf_factor;
  j.last_update = now;
}

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_JOB_H_
