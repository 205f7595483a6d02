// Summary metrics of a finished simulation (keys documented in docs/simulator.md).
#ifndef GPUFLEET_SIM_METRICS_H_
#define GPUFLEET_SIM_METRICS_H_

#include <cstdint>
#include <vector>

#include "gpufleet/policies/job.h"

namespace gpufleet::sim {

struct Summary {
  int64_t num_jobs = 0;
  double avg_jct = 0, p50_jct = 0, p95_jct = 0, p99_jct = 0;
  double avg_queueing_delay = 0;
  double makespan = 0;  // last completion - first submission
  int64_t preemptions = 0, migrations = 0;
  int64_t jobs_spanning_nodes = 0;  // jobs whose GPUs were ever on more than one node
  int64_t dropped_jobs = 0;  // removed unfinished (Gavel-compatible mode); not in the JCT figures
  double gpu_utilization = 0;  // busy GPU-seconds / (GPUs x makespan)
};

// Percentile with linear interpolation between order statistics (numpy's default); q in [0, 100].
double Percentile(std::vector<double> values, double q);

Summary Summarize(const std::vector<jobtime::Job>& jobs, int total_gpus, double busy_gpu_seconds);

}  // namespace gpufleet::sim

#endif  // GPUFLEET_SIM_METRICS_H_
