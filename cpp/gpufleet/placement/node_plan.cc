#include "gpufleet/placement/node_plan.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/placement/rdma_vf_plan.h"

namespace gpufleet {
namespace {

// Joint allocation: a NIC (or any non-GPU device) under the same PCIe switch as the pod's GPUs
// keeps GPUDirect RDMA traffic off the CPU's root complex; failing that, one on the same NUMA
// node. A preference, not a constraint, so the fit (which never looks at it) and the plan agree
// on which nodes fit. Fills `chosen` only when a near set serves the whole request.
void PreferNearGpus(const NodeView& v, const std::vector<int>& gpus, const DeviceRequest& r,
                    const PlacementStrategy& strategy,
                    const std::vector<std::vector<int>>& domains, std::vector<int>* chosen) {
  auto near = [&](int d, bool by_switch) {
    const DeviceTopology& t = v.device(d).topology;
    for (int g : gpus) {
      const DeviceTopology& gt = v.device(g).topology;
      if (by_switch ? !t.pcie_switch.empty() && t.pcie_switch == gt.pcie_switch
                    : t.numa_node >= 0 && t.numa_node == gt.numa_node)
        return true;
    }
    return false;
  };
  for (bool by_switch : {true, false}) {
    std::vector<std::vector<int>> close(domains.size());
    for (size_t k = 0; k < domains.size(); ++k)
      for (int d : domains[k])
        if (near(d, by_switch)) close[k].push_back(d);
    chosen->clear();
    if (strategy.ChooseDevices(v, r, close, chosen) && static_cast<int>(chosen->size()) == r.count)
      return;
  }
  chosen->clear();
}

}  // namespace

Placement PlanOnNode(const ClusterState& state, const Pod& pod, int node,
                     const PlacementStrategy& strategy, Admission admission) {
  // The node's admission fits the devices once and says where each choice may come from.
  RequestDomains domains;
  if (FitResult f = AdmitNode(state, pod, node, admission, &domains); !f.ok())
    return Placement::None(std::move(f.reason));
  const NodeView view = state.View(node);
  Placement p;
  Allocation& a = p.allocation;
  a.pod = pod.name;
  a.node = state.node(node).name;
  a.cpu_milli = pod.cpu_milli;
  a.memory_bytes = pod.memory_bytes;
  std::vector<int> chosen, gpus;
  int grants = 0;
  for (const DeviceRequest& r : pod.devices) grants += r.count;
  a.devices.reserve(grants);
  // Requests are sorted by type, so GPUs ("gpu") are chosen before NICs ("rdma").
  for (size_t k = 0; k < pod.devices.size(); ++k) {
    const DeviceRequest& r = pod.devices[k];
    if (NodeHasVfNics(view) && r.type == kRdma) {  // NICs with SR-IOV VFs: rdma_vf_plan.h
      FitResult f = PlanVfGrants(view, pod, r, gpus, strategy, domains[k], &a.devices);
      if (!f.ok()) return Placement::None(std::move(f.reason));
      continue;
    }
    chosen.clear();
    if (r.type != kGpu && !gpus.empty())
      PreferNearGpus(view, gpus, r, strategy, domains[k], &chosen);
    if (chosen.empty() && (!strategy.ChooseDevices(view, r, domains[k], &chosen) ||
                           static_cast<int>(chosen.size()) != r.count))
      return Placement::None(absl::StrFormat("no %s devices satisfy the request", r.type));
    if (r.type == kGpu && k + 1 < pod.devices.size()) gpus = chosen;  // for the NICs after them
    for (int d : chosen) {
      const Device& dev = view.device(d);
      DeviceGrant g;
      g.type = dev.type;
      g.minor = dev.minor;
      g.core = r.whole() ? dev.core : r.core;
      g.memory_bytes = r.whole() ? dev.memory_bytes : RequestBytesOn(r, dev);
      a.devices.push_back(std::move(g));
    }
  }
  p.node = node;
  return p;
}

}  // namespace gpufleet
