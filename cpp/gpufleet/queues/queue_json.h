// Queue specs as JSON: gpufleet's own fields, and the queue objects of KAI Scheduler, Kueue and
// Volcano read unchanged (docs/queues.md).
//
// gpufleet's fields (each amount map is {resource: quantity}; resources "cpu" (cores, "500m"),
// "memory" ("64Gi"), "gpu" (GPUs, fractions allowed; "nvidia.com/gpu" too) and device kinds such
// as "mig-1g.10gb" or "nvidia.com/mig-1g.10gb"; "unlimited" or -1 where a limit may be absent):
//   {"name", "parent", "weight", "priority", "creation", "reclaimable", "capability",
//    "quota", "limit", "guarantee", "borrowing_limit", "lending_limit", "over_quota_weight",
//    "reclaim_within_cohort": "Never" | "LowerPriority" | "Any",
//    "borrow_within_cohort": {"policy": "Never" | "LowerPriority", "max_priority_threshold": N}}
//
// Objects (apiVersion/kind/metadata/spec, as the systems' manifests have them):
//   KAI      scheduling.run.ai Queue: parentQueue, priority, resources.{cpu,memory,gpu}.{quota,
//            limit,overQuotaWeight} (cpu in millicores, memory in megabytes, -1 unlimited; an
//            absent limit is unlimited);
//   Kueue    kueue.x-k8s.io ClusterQueue (cohort / cohortName, resourceGroups, fairSharing.weight,
//            preemption) and Cohort (parent / parentName, resourceGroups, fairSharing); quotas of
//            all flavors of a resource add up; cohorts that queues name without an object are
//            created empty, as Kueue does;
//   Volcano  scheduling.volcano.sh Queue: parent, weight, priority, reclaimable, deserved,
//            capability, guarantee.resource ("root" is the top when no queue is named so).
#ifndef GPUFLEET_QUEUES_QUEUE_JSON_H_
#define GPUFLEET_QUEUES_QUEUE_JSON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/queues/queue_spec.h"

namespace gpufleet::queues {

// The keys ReadQuotaFields reads (for callers that check unknown keys).
const std::vector<std::string>& QuotaFieldNames();
// Reads "parent" and the quota fields of a gpufleet queue object; errors name `owner`.
absl::Status ReadQuotaFields(const Json& j, const std::string& owner, std::string* parent,
                             QuotaSpec* quota);
// The same fields back, in the units ReadQuotaFields reads (only what differs from defaults).
void WriteQuotaFields(const std::string& parent, const QuotaSpec& quota, Json* j);
// The internal resource name for a Kubernetes or gpufleet one ("nvidia.com/gpu" -> "gpu").
std::string ResourceName(const std::string& name);
// One amount in engine units from JSON (quantity string or number); `unlimited_ok` accepts
// "unlimited" and -1.
absl::StatusOr<double> ReadAmount(const std::string& resource, const Json& v, bool unlimited_ok,
                                  const std::string& where);

// A full spec from gpufleet's fields (name, parent, weight, reclaimable, quota fields; a
// "capability" map becomes limits).
absl::StatusOr<QueueSpec> QueueSpecFromJson(const Json& j);
// Whether `j` looks like a Kubernetes object (has apiVersion and kind).
bool IsQueueObject(const Json& j);
// Converts KAI / Kueue / Volcano objects (a list; other kinds are errors) to gpufleet queue JSON,
// adding implicit Kueue cohorts. Errors name the object (kind and name).
absl::StatusOr<std::vector<Json>> QueuesFromObjects(const Json& objects);

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_QUEUE_JSON_H_
