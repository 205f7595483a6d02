// A job (a pod group): tasks that a distributed training run needs, of which at least
// `min_available` must run at once (the gang). Tasks are pods; their names are unique keys across
// the scheduler because the accounting knows a running task by its pod name.
#ifndef GPUFLEET_ENGINE_JOB_H_
#define GPUFLEET_ENGINE_JOB_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpufleet/core/pod.h"
#include "gpufleet/topology/gang_request.h"

namespace gpufleet::engine {

struct Job {
  std::string name;
  std::string queue = "default";
  int priority = 0;
  int min_available = 1;
  int64_t creation = 0;  // earlier jobs win ties; 0: the scheduler stamps submission order
  std::vector<Pod> tasks;
  // For job-time policies (the jobtime action): speed per GPU model relative to the reference
  // model (work-seconds per second; a model not listed cannot run the job; empty = 1.0 on every
  // model), and the run time on the reference model (0 = unknown).
  std::map<std::string, double> throughput;
  double expected_duration = 0;
  // Where the gang goes across network topology levels (topology/gang_request.h); placed by the
  // gang-topology plugin's topology, ignored without it. Empty: node by node, as before.
  topology::Constraint topology;
  // Sub-groups of the gang (a leader, workers) named by entries of the task list that carry
  // `replicas` or their own `topology`: such an entry's tasks form one group under its
  // constraint, inside the job's. Per task, an index into task_groups, or -1 for tasks of plain
  // entries, which group as before (equal requests in a row). Both empty when no entry names one.
  struct TaskGroup {
    std::string name;               // the entry's name
    topology::Constraint topology;  // empty: only the job's constraint applies
  };
  std::vector<TaskGroup> task_groups;
  std::vector<int> task_group;
  // Whether the job or any of its sub-groups asks for a topology placement.
  bool HasTopology() const {
    if (!topology.empty()) return true;
    for (const TaskGroup& g : task_groups)
      if (!g.topology.empty()) return true;
    return false;
  }
};

// A task without requests (no cpu, memory or devices): best-effort, placed by backfill.
inline bool IsBestEffort(const Pod& pod) {
  return pod.cpu_milli == 0 && pod.memory_bytes == 0 && pod.devices.empty();
}

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_JOB_H_
