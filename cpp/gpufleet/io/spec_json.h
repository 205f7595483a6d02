// Nodes and pods to and from the scenario format's JSON (Koordinator Device spec entries for
// devices; Kubernetes-style quantity strings for resources). Errors name the object and field.
#ifndef GPUFLEET_IO_SPEC_JSON_H_
#define GPUFLEET_IO_SPEC_JSON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/effective_request.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/core/request_parser.h"

namespace gpufleet {

// {"name","cpu","memory","pods","labels","taints","gpu_sharing","nvlink_groups","devices":[...]}
// or the shorthand "gpus": {"count", "model", "memory"} for identical GPUs. Unknown fields are
// errors with a did-you-mean; sizes are bounded (kMaxDevicesPerNode and friends in core/node.h).
absl::StatusOr<Node> NodeFromJson(const Json& j);
Json NodeToJson(const Node& node);

// {"name","requests":{...},"node_selector","tolerations","gpu_models","scope","priority"}
// Instead of "requests", a pod may list its containers as Kubernetes does: "containers" and
// "init_containers" ([{"name", "requests", "limits"}], an init container with
// "restart_policy": "Always" being a sidecar) and "overhead"; its request is then the effective
// request (core/effective_request.h), each quantity read once.
// Unknown fields are errors with a did-you-mean; PodFields() lists the known ones.
const std::vector<std::string>& PodFields();
absl::StatusOr<Pod> PodFromJson(const Json& j, const RequestParseOptions& options = {});

// A pod spec's requests: its effective request when it lists containers, else its "requests",
// each quantity read once. Errors name `owner` and the field.
absl::StatusOr<ResourceQuantities> PodRequestsFromJson(const Json& j, const std::string& owner);

}  // namespace gpufleet

#endif  // GPUFLEET_IO_SPEC_JSON_H_
