// A pod's effective request from its containers, as Kubernetes computes it for scheduling
// (kubernetes.io/docs/concepts/workloads/pods/init-containers, sidecar-containers; the
// component-helpers' PodRequests with sidecars, Kubernetes 1.29+), per resource:
//   - a container's request for a resource is its `requests` entry, or its `limits` entry when it
//     sets only a limit (the API server's defaulting);
//   - after initialization the pod runs its sidecars (init containers with restartPolicy Always)
//     and its regular containers together: their sum;
//   - during initialization the init containers run one at a time in order, each beside the
//     sidecars started before it: a regular init container needs its own request plus those
//     sidecars', a sidecar needs the sidecars up to and including itself; the effective init
//     request is the largest of these;
//   - the effective request is the larger of the two, plus the pod's overhead.
// Each quantity is read once, exactly (Quantity); zero results are left out.
#ifndef GPUFLEET_CORE_EFFECTIVE_REQUEST_H_
#define GPUFLEET_CORE_EFFECTIVE_REQUEST_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/quantity.h"

namespace gpufleet {

struct ContainerResources {
  std::map<std::string, std::string> requests;  // resource -> quantity text
  std::map<std::string, std::string> limits;
  bool sidecar = false;  // an init container with restartPolicy: Always
};

struct PodResources {
  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
  std::map<std::string, std::string> overhead;
};

// Errors name the field: "init_containers[1].limits.cpu: invalid quantity \"x\": no digits".
absl::StatusOr<ResourceQuantities> EffectiveRequests(const PodResources& pod);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_EFFECTIVE_REQUEST_H_
