// A queue: the unit of sharing between teams. With the proportion plugin queues are flat and
// deserved shares come from their weights, capped by `capability` and by what the queue's jobs
// ask for. Queues may also form a tree (`parent`, `quota`: KAI, Kueue and Volcano quotas, read by
// the queuetree plugin; docs/queues.md); only queues without children hold jobs.
#ifndef GPUFLEET_ENGINE_QUEUE_H_
#define GPUFLEET_ENGINE_QUEUE_H_

#include <string>

#include "gpufleet/engine/resources.h"
#include "gpufleet/queues/queue_spec.h"

namespace gpufleet::engine {

struct Queue {
  std::string name;
  double weight = 1.0;                              // >= 0; 0 takes only what nobody else asks for
  Resources capability = Resources::Unlimited();    // hard cap per resource
  bool reclaimable = true;                          // others may take back what exceeds its share
  std::string parent;                               // "" at the top of the tree
  queues::QuotaSpec quota;                          // per-resource quotas (queues/queue_spec.h)
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_QUEUE_H_
