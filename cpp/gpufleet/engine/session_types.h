// What a session knows about each task, job and queue. Ids are indices into the session's vectors;
// they are stable for the session's life and ordered like the scheduler's name order.
#ifndef GPUFLEET_ENGINE_SESSION_TYPES_H_
#define GPUFLEET_ENGINE_SESSION_TYPES_H_

#include <string>
#include <vector>

#include "gpufleet/accounting/allocation.h"
#include "gpufleet/engine/job.h"
#include "gpufleet/engine/queue.h"
#include "gpufleet/engine/resources.h"

namespace gpufleet::engine {

enum class TaskStatus {
  kPending = 0,    // waiting for a node
  kAllocated = 1,  // placed in this session (tentatively until its statement commits)
  kRunning = 2,    // bound before this session
  kReleasing = 3,  // evicted in this session; not placed again before the next cycle
};
const char* TaskStatusName(TaskStatus s);

struct TaskInfo {
  int id = 0;
  int job = 0;
  const Pod* pod = nullptr;
  Resources request;
  TaskStatus status = TaskStatus::kPending;
  int node = -1;            // node index while allocated or running
  int request_key = 0;      // tasks with equal keys have identical requests and constraints
  int constraint_key = 0;   // tasks with equal keys have identical selectors/tolerations
  bool best_effort = false;
  const std::string& name() const { return pod->name; }
  bool occupies() const { return status == TaskStatus::kAllocated || status == TaskStatus::kRunning; }
};

struct JobInfo {
  int id = 0;
  const Job* spec = nullptr;
  int queue = 0;
  std::vector<int> tasks;
  Resources allocated;      // of occupying tasks
  Resources min_request;    // of the first min_available tasks: what the gang needs to start
  int occupied = 0;         // tasks allocated or running
  int occupied_at_open = 0; // tasks running when the session opened
  int waiting_cycles = 0;   // consecutive cycles this job was not ready (kept by the scheduler)
  bool valid = true;
  bool inqueue = false;     // admitted by enqueue (or by default when no enqueue action runs)
  std::string reason;       // why it is (still) pending
  const std::string& name() const { return spec->name; }
  int priority() const { return spec->priority; }
  int min_available() const { return spec->min_available; }
  int pending_count(const std::vector<TaskInfo>& all) const {
    int n = 0;
    for (int t : tasks) n += all[t].status == TaskStatus::kPending;
    return n;
  }
};

struct QueueInfo {
  int id = 0;
  const Queue* spec = nullptr;
  std::vector<int> jobs;
  Resources allocated;  // of occupying tasks of its jobs
  Resources request;    // allocated + pending requests of its valid jobs (its demand)
  Resources inqueue;    // minimum requests of admitted jobs that do not run yet
  Resources deserved;   // set by the proportion plugin; Unlimited when none is configured
  const std::string& name() const { return spec->name; }
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_SESSION_TYPES_H_
