// A queue: the unit of sharing between teams. Queues are flat; deserved shares come from their
// weights (proportion plugin), capped by `capability` and by what the queue's jobs ask for.
#ifndef GPUFLEET_ENGINE_QUEUE_H_
#define GPUFLEET_ENGINE_QUEUE_H_

#include <string>

#include "gpufleet/engine/resources.h"

namespace gpufleet::engine {

struct Queue {
  std::string name;
  double weight = 1.0;                              // >= 0; 0 takes only what nobody else asks for
  Resources capability = Resources::Unlimited();    // hard cap per resource
  bool reclaimable = true;                          // others may take back what exceeds its share
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_QUEUE_H_
