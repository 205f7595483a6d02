#include "gpufleet/topology/node_capacity.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gpufleet/placement/node_plan.h"

namespace gpufleet::topology {

int NodeCapacity::SummaryRoute(const Pod& pod) const {
  if (pod.devices.empty()) return 1;
  if (pod.devices.size() != 1) return 0;
  const DeviceRequest& r = pod.devices[0];
  if (r.type != kGpu || !r.whole() || !pod.gpu_models.empty() || pod.scope != TopologyScope::kNone)
    return 0;
  return r.count == 1 ? 1 : 2;
}

bool NodeCapacity::FromSummaries(const Pod& pod, int node) const {
  const int route = SummaryRoute(pod);
  return route == 1 || (route == 2 && !state_.usage(node).has_nvlink);
}

void NodeCapacity::CountAll(const Pod& pod, const std::vector<int>& nodes, int limit, int* out) {
  const int route = SummaryRoute(pod);
  const bool clean = added_.empty();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const int node = nodes[k];
    if (clean && (route == 1 || (route == 2 && !state_.usage(node).has_nvlink)))
      out[k] = CountBySummaries(pod, node);
    else
      out[k] = Count(pod, node, limit);
  }
}

int NodeCapacity::CountBySummaries(const Pod& pod, int node) const {
  const NodeUsage& u = state_.usage(node);
  if ((!pod.node_selector.empty() || u.has_taints) && !FitsNodeConstraints(pod, state_.node(node)).ok())
    return 0;
  static const Added kNone;
  const Added* found = nullptr;
  if (!added_.empty()) {
    auto it = added_.find(node);
    if (it != added_.end()) found = &it->second;
  }
  const Added& a = found != nullptr ? *found : kNone;
  int64_t n = u.max_pods - u.pods_used - a.pods;
  if (pod.cpu_milli > 0) n = std::min(n, (u.cpu_capacity - u.cpu_used - a.cpu) / pod.cpu_milli);
  if (pod.memory_bytes > 0)
    n = std::min(n, (u.memory_capacity - u.memory_used - a.memory) / pod.memory_bytes);
  if (!pod.devices.empty()) {
    const int k = pod.devices[0].count;
    if (u.gpu_sharing == GpuSharing::kSharedOnly) return 0;
    if (k > 0) n = std::min<int64_t>(n, (u.gpu_whole_free - a.whole_gpus) / k);
  }
  return static_cast<int>(std::max<int64_t>(0, n));
}

ClusterState& NodeCapacity::Probe(int node) {
  auto it = probes_.find(node);
  if (it != probes_.end()) return *it->second;
  if (!allocations_indexed_) {
    for (const Allocation* a : state_.Allocations()) allocations_by_node_[a->node].push_back(a);
    allocations_indexed_ = true;
  }
  auto probe = std::make_unique<ClusterState>();
  (void)probe->AddNode(state_.node(node));
  // Health as the state has it: the probe's copy of the node starts healthy.
  for (const Device& d : state_.node(node).devices)
    if (!d.healthy) (void)probe->SetDeviceHealth(state_.node(node).name, d.type, d.minor, false);
  for (const Allocation* a : allocations_by_node_[state_.node(node).name]) {
    Allocation copy = *a;
    copy.state = AllocationState::kReserved;
    (void)probe->Reserve(copy);
  }
  ClusterState& p = *probe;
  probes_.emplace(node, std::move(probe));
  auto added = added_.find(node);
  if (added != added_.end())
    for (const auto& [shape, count] : added->second.pods_by_shape) {
      Pod pod = *shape;
      for (int k = 0; k < count; ++k) {
        pod.name = absl::StrCat("topology-probe/", next_probe_pod_++);
        Placement plan = PlanOnNode(p, pod, 0, strategy_);
        if (plan.ok()) (void)p.Reserve(plan.allocation);
      }
    }
  return p;
}

int NodeCapacity::Count(const Pod& pod, int node, int limit) {
  if (limit <= 0) return 0;
  auto added = added_.find(node);
  const bool by_plan = added != added_.end() && added->second.by_plan;
  if (!by_plan && FromSummaries(pod, node)) return CountBySummaries(pod, node);
  ClusterState& p = Probe(node);
  Pod probe_pod = pod;
  std::vector<std::string> reserved;
  int n = 0;
  while (n < limit) {
    probe_pod.name = absl::StrCat("topology-probe/", next_probe_pod_++);
    Placement plan = PlanOnNode(p, probe_pod, 0, strategy_);
    if (!plan.ok() || !p.Reserve(plan.allocation).ok()) break;
    reserved.push_back(probe_pod.name);
    ++n;
  }
  for (const std::string& name : reserved) (void)p.Unreserve(name);
  return n;
}

void NodeCapacity::Add(const Pod& pod, int node, int count) {
  if (count <= 0) return;
  Added& a = added_[node];
  a.cpu += pod.cpu_milli * count;
  a.memory += pod.memory_bytes * count;
  a.pods += count;
  if (!pod.devices.empty() && pod.devices[0].type == kGpu && pod.devices[0].whole())
    a.whole_gpus += static_cast<int64_t>(pod.devices[0].count) * count;
  if (!FromSummaries(pod, node)) a.by_plan = true;
  a.pods_by_shape.emplace_back(&pod, count);
  auto it = probes_.find(node);
  if (it == probes_.end()) return;
  Pod copy = pod;
  for (int k = 0; k < count; ++k) {
    copy.name = absl::StrCat("topology-probe/", next_probe_pod_++);
    Placement plan = PlanOnNode(*it->second, copy, 0, strategy_);
    if (plan.ok()) (void)it->second->Reserve(plan.allocation);
  }
}

}  // namespace gpufleet::topology
