// Topologies and gangs from JSON (what Python dicts, YAML files and the extender hand over):
//   levels: [{"name": "rack", "label": "cloud.provider.com/topology-rack"}, ...], or a Kueue or
//     KAI Topology object read unchanged ({"kind": "Topology", "spec": {"levels": [{"nodeLabel":
//     ...}]}}; each level is named by its label, as those projects name them);
//   HyperNodes: Volcano's objects read unchanged, a list of them or a List with "items"
//     ({"metadata": {"name"}, "spec": {"tier", "members": [{"type": "Node" | "HyperNode",
//     "selector": {"exactMatch": {"name"}} | {"regexMatch": {"pattern"}} | {"labelMatch":
//     {"matchLabels": {...}}}}]}});
//   a gang: {"name", "fit", "required", "preferred", "annotations", "groups": [{"name", "count",
//     "requests", "node_selector", "tolerations", "gpu_models", "scope", "required",
//     "preferred", "slice_level", "slice_size", "balanced", "annotations"}]}, where annotations
//     may carry Kueue's podset-*-topology keys and KAI's topology-*-placement keys, and a gang or
//     group may carry Volcano's "networkTopology": {"mode": "hard" | "soft",
//     "highestTierAllowed": t} (for topologies read from HyperNodes, whose levels are "tier-<t>").
// Unknown fields of our own objects are errors with a did-you-mean; Kubernetes objects keep
// whatever else they carry (metadata, status).
#ifndef GPUFLEET_TOPOLOGY_TOPOLOGY_JSON_H_
#define GPUFLEET_TOPOLOGY_TOPOLOGY_JSON_H_

#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/topology/gang_request.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::topology {

absl::StatusOr<std::vector<Level>> LevelsFromJson(const Json& j);
absl::StatusOr<std::vector<HyperNode>> HyperNodesFromJson(const Json& j);
absl::StatusOr<GangRequest> GangRequestFromJson(const Json& j);
// One constraint: {"required", "preferred", "slice_level", "slice_size", "balanced",
// "annotations"} (the engine's job field "topology"); `where` names the owner in errors.
absl::StatusOr<Constraint> ConstraintFromJson(const Json& j, const std::string& where);

}  // namespace gpufleet::topology

#endif  // GPUFLEET_TOPOLOGY_TOPOLOGY_JSON_H_
