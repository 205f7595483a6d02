// The engine's queues as the specs of a queue tree (queues/queue_tree.h), and the checks that
// keep the scheduler's queues a tree: every change to queues or jobs is checked before it
// applies, so a bad tree is refused with one line and the scheduler stays as it was.
#ifndef GPUFLEET_ENGINE_QUEUE_TREE_SPECS_H_
#define GPUFLEET_ENGINE_QUEUE_TREE_SPECS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/engine/job.h"
#include "gpufleet/engine/queue.h"
#include "gpufleet/queues/queue_spec.h"

namespace gpufleet::engine {

// Capability becomes limits on cpu, memory and gpu; weight, reclaimable, parent and quota carry
// over.
queues::QueueSpec TreeSpecOf(const Queue& q);
std::vector<queues::QueueSpec> TreeSpecsOf(const std::vector<const Queue*>& queues);

// The queues form a tree (queues/queue_tree.h's checks) and jobs are only in queues without
// children.
absl::Status CheckQueueTree(const std::map<std::string, Queue>& queues,
                            const std::map<std::string, Job>& jobs);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_QUEUE_TREE_SPECS_H_
