#include "gpufleet/engine/queue_tree_specs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "gpufleet/queues/queue_tree.h"

namespace gpufleet::engine {

queues::QueueSpec TreeSpecOf(const Queue& q) {
  queues::QueueSpec s;
  s.name = q.name;
  s.parent = q.parent;
  s.weight = q.weight;
  s.reclaimable = q.reclaimable;
  s.quota = q.quota;
  for (int r = 0; r < kNumResources; ++r)
    if (!std::isinf(q.capability[r])) {
      double& limit = s.quota.resources[kResourceNames[r]].limit;
      limit = std::min(limit, q.capability[r]);
    }
  return s;
}

std::vector<queues::QueueSpec> TreeSpecsOf(const std::vector<const Queue*>& queues) {
  std::vector<queues::QueueSpec> out;
  out.reserve(queues.size());
  for (const Queue* q : queues) out.push_back(TreeSpecOf(*q));
  return out;
}

absl::Status CheckQueueTree(const std::map<std::string, Queue>& queues,
                            const std::map<std::string, Job>& jobs) {
  std::vector<const Queue*> all;
  std::map<std::string, std::string> child_of;  // parent -> one child
  for (const auto& [name, q] : queues) {
    all.push_back(&q);
    if (!q.parent.empty()) child_of.emplace(q.parent, name);
  }
  if (!child_of.empty()) {
    absl::Status s = queues::ValidateQueueTree(TreeSpecsOf(all));
    if (!s.ok()) return s;
    for (const auto& [name, job] : jobs) {
      auto it = child_of.find(job.queue);
      if (it != child_of.end())
        return absl::FailedPreconditionError(absl::StrFormat(
            "queue %s has job %s, so it cannot have child queues (%s); only queues without "
            "children hold jobs",
            job.queue, name, it->second));
    }
    return absl::OkStatus();
  }
  // A flat set of queues: only their own numbers can be wrong.
  for (const Queue* q : all) {
    absl::Status s = queues::ValidateQueueTree({TreeSpecOf(*q)});
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpufleet::engine
