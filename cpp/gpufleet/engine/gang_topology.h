// The network topology a session places gangs by, set by the gang-topology plugin: the levels
// built from the session's nodes and the fit rule (topology/gang_placer.h). Jobs whose spec names
// a topology constraint are placed whole through it (actions/place_by_topology.h); the
// reservation ledger plans a starving one inside a single domain of its required level.
#ifndef GPUFLEET_ENGINE_GANG_TOPOLOGY_H_
#define GPUFLEET_ENGINE_GANG_TOPOLOGY_H_

#include "gpufleet/topology/gang_request.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::engine {

struct GangTopology {
  topology::Topology topology;
  topology::Fit fit = topology::Fit::kBestFit;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_GANG_TOPOLOGY_H_
