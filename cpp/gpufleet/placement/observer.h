// Strategies whose score depends on which pods a node holds, not only on its free resources
// (GpuClustering groups pods by request class), also implement PlacementObserver. Whoever binds or
// releases pods with such a strategy reports it (the openb replay does; an adapter that does not
// leaves the strategy on its device-state estimate, documented with the strategy).
#ifndef GPUFLEET_PLACEMENT_OBSERVER_H_
#define GPUFLEET_PLACEMENT_OBSERVER_H_

#include "gpufleet/core/node.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

class PlacementObserver {
 public:
  virtual ~PlacementObserver() = default;
  virtual void OnBound(const Node& node, const Pod& pod) = 0;
  virtual void OnReleased(const Node& node, const Pod& pod) = 0;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_OBSERVER_H_
