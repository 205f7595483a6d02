// A scheduler from the scenario format extended with queues and jobs (the same tables feed the
// CLI, the tests and the docs):
//   {"nodes": [node, ...], "queues": [queue, ...], "jobs": [job, ...]}
// A job may list "running": ["n1", "n1", ...]: its first tasks already run on those nodes
// (devices chosen by binpack), e.g. to state who holds what before a preempt or reclaim.
#ifndef GPUFLEET_ENGINE_SCENARIO_JSON_H_
#define GPUFLEET_ENGINE_SCENARIO_JSON_H_

#include "absl/status/status.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/scheduler.h"

namespace gpufleet::engine {

// Adds the scenario's nodes, queues and jobs to `scheduler`. Errors name the entry. Every entry is
// read and checked (fields, names already taken) before anything is added, so such an error
// leaves the scheduler unchanged; a failure while adding (a queue a job names that does not exist,
// a "running" task that does not fit) may leave the entries before it (build a fresh scheduler to
// retry).
absl::Status LoadScenario(const Json& scenario, Scheduler* scheduler);

// Marks a submitted job's task as running on `node` (binpack device choice).
absl::Status StartTask(Scheduler* scheduler, const std::string& job, int task,
                       const std::string& node);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_SCENARIO_JSON_H_
