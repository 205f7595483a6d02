#include "gpufleet/placement/node_admission.h"

#include "gpufleet/accounting/device_fit.h"

namespace gpufleet {
namespace {

// Exact fit of an unconstrained GPU request (no models, no scope, no NVLink) from the per-device
// arrays.
bool FastGpuFit(const ClusterState& state, int node, const DeviceRequest& r) {
  const NodeUsage& u = state.usage(node);
  if (u.gpu_sharing == GpuSharing::kWholeOnly && !r.whole()) return false;
  if (u.gpu_sharing == GpuSharing::kSharedOnly && r.whole()) return false;
  if (r.whole()) return u.gpu_whole_free >= r.count;
  // Enough untouched GPUs, each big enough: the common case on a cluster that is not full.
  if (u.gpu_whole_free >= r.count && r.core <= u.gpu_min_core_capacity &&
      (r.memory_ratio > 0 ? r.memory_ratio <= 100 : r.memory_bytes <= u.gpu_min_memory_capacity))
    return true;
  const int begin = state.first_device(node);
  const int end = begin + u.num_devices;
  const int64_t* used_core = state.used_core().data();
  const int64_t* used_memory = state.used_memory().data();
  const uint8_t* healthy = state.healthy_gpu().data();
  const int64_t* capacity_core = state.capacity_core().data();
  const int64_t* capacity_memory = state.capacity_memory().data();
  int fitting = 0;
  for (int d = begin; d < end; ++d) {
    if (!healthy[d]) continue;
    const int64_t bytes = r.memory_ratio > 0 ? (r.memory_ratio * capacity_memory[d] + 99) / 100
                                             : r.memory_bytes;
    if (capacity_core[d] - used_core[d] >= r.core &&
        capacity_memory[d] - used_memory[d] >= bytes && ++fitting >= r.count)
      return true;
  }
  return false;
}

}  // namespace

FitResult AdmitNode(const ClusterState& state, const Pod& pod, int node, Admission admission,
                    RequestDomains* domains) {
  if (admission == Admission::kFull) {
    FitResult constraints = FitsNodeConstraints(pod, state.node(node));
    if (!constraints.ok()) return constraints;
  }
  if (domains == nullptr) return state.Filter(pod, node);
  // Filter's checks in Filter's order, keeping what the device fit found.
  if (!QuickMayFit(pod, nullptr, state.usage(node))) return state.FilterTotals(pod, node);
  const NodeView view = state.View(node);
  domains->assign(pod.devices.size(), {});
  for (size_t k = 0; k < pod.devices.size(); ++k) {
    FitResult f = FitDeviceRequest(view, pod, pod.devices[k], &(*domains)[k]);
    if (!f.ok()) return f;
  }
  return FitResult::Ok();
}

NodeAdmission::NodeAdmission(const ClusterState& state, const Pod& pod)
    : state_(state), pod_(pod), gpu_(pod.Find(kGpu)) {
  const bool gpu_only = pod.devices.size() == (gpu_ ? 1u : 0u);
  simple_ = gpu_only && pod.gpu_models.empty() && pod.scope == TopologyScope::kNone;
  check_constraints_ = !pod.node_selector.empty();
}

bool NodeAdmission::Constraints(int node) const {
  return !(check_constraints_ || state_.usage(node).has_taints) ||
         FitsNodeConstraints(pod_, state_.node(node)).ok();
}

bool NodeAdmission::MayAdmit(int node) const {
  return QuickMayFit(pod_, gpu_, state_.usage(node)) && Constraints(node);
}

bool NodeAdmission::FastOn(int node) const {
  return simple_ && (gpu_ == nullptr || gpu_->count == 1 || !state_.usage(node).has_nvlink);
}

bool NodeAdmission::DevicesFit(int node) const {
  if (FastOn(node)) return gpu_ == nullptr || FastGpuFit(state_, node, *gpu_);
  return state_.Filter(pod_, node).ok();
}

bool NodeAdmission::Admits(int node) const { return MayAdmit(node) && DevicesFit(node); }

}  // namespace gpufleet
