// Multi-tenant job-time simulation over a queue tree: jobs of a trace arrive in leaf queues and
// run on a pool of GPUs counted whole (as the job-time simulator counts them); at every
// scheduling point the tree's fair shares are computed (kai, drs or capacity, optionally
// time-aware from the decayed usage of the run so far), pending jobs start in queue order while
// GPUs are free, and a queue below its share reclaims from queues above theirs by the tree's
// rules (never below a deserved amount, never closing a preemption cycle), preempted jobs keeping
// their progress. It reports every job's start, end and preemptions and, per scheduling point,
// each queue's GPUs held, fair share and demand: months of a multi-team trace in seconds.
#ifndef GPUFLEET_SIM_QUEUE_SIM_H_
#define GPUFLEET_SIM_QUEUE_SIM_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/queues/division.h"
#include "gpufleet/queues/queue_tree.h"
#include "gpufleet/queues/reclaim_rules.h"
#include "gpufleet/queues/usage_history.h"

namespace gpufleet::sim {

struct QueueSimJob {
  int64_t id = 0;
  double submit_time = 0;
  double duration = 0;  // seconds of running time
  int num_gpu = 1;
  int queue = 0;        // a leaf of the tree
  int priority = 0;
};

struct QueueSimOptions {
  queues::DivisionPolicy policy = queues::DivisionPolicy::kKai;
  double k_value = 0;          // time-aware fairness (kai); 0: off
  queues::UsageParams usage;   // half-life and window of past usage
  queues::ReclaimSettings reclaim;
  bool preempt = true;         // reclaim for queues below their share
  // > 0: schedule on multiples of this many seconds (events in between wait); 0: at every event.
  double interval = 0;
  // > 0: record queue samples at most this often (seconds); 0: at every scheduling point.
  double sample_every = 0;
};

struct QueueSimJobResult {
  double start = -1;   // first start
  double end = -1;
  int preemptions = 0;
};

struct QueueSample {  // one queue at one time
  double time = 0;
  int queue = 0;
  double held = 0;        // GPUs its subtree runs
  double fair_share = 0;  // GPUs
  double demand = 0;      // GPUs held plus pending
};

struct QueueSimResult {
  std::vector<QueueSimJobResult> jobs;  // in input order
  std::vector<QueueSample> samples;
  int64_t scheduling_points = 0;
  int64_t preemptions = 0;
};

// Validates the jobs (leaf queue, GPUs within the pool, positive duration) and runs to the end.
absl::StatusOr<QueueSimResult> SimulateQueues(const queues::QueueTree& tree, int gpus,
                                              const std::vector<QueueSimJob>& jobs,
                                              const QueueSimOptions& options);

}  // namespace gpufleet::sim

#endif  // GPUFLEET_SIM_QUEUE_SIM_H_
