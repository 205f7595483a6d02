// Jobs and queues from the scenario format's JSON. Errors name the job or queue and the field.
//   queue: {"name", "weight", "capability": {"cpu": "64", "memory": "256Gi", "gpu": 16},
//           "reclaimable", and the queue-tree fields of queues/queue_json.h: "parent",
//           "quota", "limit", "guarantee", ...}
//   job:   {"name", "queue", "priority", "min_available", "creation",
//           "throughput": {gpu model: speed}, "expected_duration": seconds,  (jobtime action)
//           "tasks": [pod, ...]}  or the shorthand  "replicas": N plus pod fields ("requests",
//           "node_selector", ...) for N identical tasks named "<job>-<i>".
// Unknown fields are errors with a did-you-mean; a job has at most kMaxJobTasks tasks.
#ifndef GPUFLEET_ENGINE_SPEC_JSON_H_
#define GPUFLEET_ENGINE_SPEC_JSON_H_

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/job.h"
#include "gpufleet/engine/queue.h"

namespace gpufleet::engine {

inline constexpr int kMaxJobTasks = 100000;

absl::StatusOr<Queue> QueueFromJson(const Json& j);
absl::StatusOr<Job> JobFromJson(const Json& j);
Json QueueToJson(const Queue& q);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_SPEC_JSON_H_
