// Whether a node admits a pod: the one check behind every filter, node choice and plan. In order:
// the pod's node selector against the node's labels, its tolerations against the node's taints,
// then capacity (pod count, cpu, memory, and every device request per device:
// ClusterState::Filter). Reasons are kube-scheduler's ("Insufficient cpu", "node(s) didn't match
// Pod's node affinity/selector", ...).
#ifndef GPUFLEET_PLACEMENT_NODE_ADMISSION_H_
#define GPUFLEET_PLACEMENT_NODE_ADMISSION_H_

#include <vector>

#include "absl/container/inlined_vector.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/accounting/fit.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

enum class Admission {
  kFull,          // labels, taints, then capacity
  kCapacityOnly,  // the host judged labels and taints itself (the engine's predicates plugin,
                  // whose switches may turn either off; a plan asked for a named node)
};

// Per device request of a pod (in its order), the groups of local device indices a choice must
// come from (accounting/device_fit.h).
using RequestDomains = absl::InlinedVector<std::vector<std::vector<int>>, 2>;

// OK, or the first reason the node refuses the pod. With `domains`, the device fit also records
// where each request's devices may come from, so a plan fits the devices once (PlanOnNode).
FitResult AdmitNode(const ClusterState& state, const Pod& pod, int node,
                    Admission admission = Admission::kFull, RequestDomains* domains = nullptr);

// AdmitNode's yes or no for one pod over many nodes: what the pod asks is worked out once, and
// no reason is worded.
class NodeAdmission {
 public:
  NodeAdmission(const ClusterState& state, const Pod& pod);

  // Labels and taints (no lookup when the pod has no selector and the node no taints).
  bool Constraints(int node) const;
  // A necessary condition: the node's totals may hold the pod, and labels and taints admit it.
  bool MayAdmit(int node) const;
  // Exactly AdmitNode(state, pod, node).ok().
  bool Admits(int node) const;
  // MayAdmit's verdict for a node known to pass it: exactly AdmitNode(...).ok() then.
  bool DevicesFit(int node) const;
  // True when DevicesFit reads only per-device arrays (no per-request device scan): a GPUs-only
  // request of any model and no scope (on NVLink nodes, of one GPU).
  bool FastOn(int node) const;

  const Pod& pod() const { return pod_; }
  const DeviceRequest* gpu() const { return gpu_; }

 private:
  const ClusterState& state_;
  const Pod& pod_;
  const DeviceRequest* gpu_ = nullptr;
  bool simple_ = false;             // GPUs only, any model, no scope
  bool check_constraints_ = false;  // the pod has a node selector
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_NODE_ADMISSION_H_
