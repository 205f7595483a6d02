#include "gpufleet/placement/rdma_vf_plan.h"

#include <set>
#include <string>

#include "absl/strings/str_format.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/core/rdma_vf.h"

namespace gpufleet {
namespace {

// The NIC's free VF with the lowest bus id (then minor); -1 when none is free.
int LowestFreeVf(const NodeView& v, int d) {
  const Device& dev = v.device(d);
  int best = -1;
  for (int k = 0; k < VfCount(dev); ++k) {
    if (v.vf_taken[d][k]) continue;
    const VirtualFunction& vf = VfAt(dev, k);
    if (best < 0 || vf.bus_id < VfAt(dev, best).bus_id ||
        (vf.bus_id == VfAt(dev, best).bus_id && vf.minor < VfAt(dev, best).minor))
      best = k;
  }
  return best;
}

DeviceGrant GrantOn(const NodeView& v, int d, const DeviceRequest& r) {
  const Device& dev = v.device(d);
  DeviceGrant g;
  g.type = dev.type;
  g.minor = dev.minor;
  g.core = r.whole() ? dev.core : r.core;
  g.memory_bytes = r.whole() ? dev.memory_bytes : 0;
  if (v.has_vfs(d)) {
    const int k = LowestFreeVf(v, d);
    if (k >= 0) g.vfs.push_back(VfAt(dev, k));
  }
  return g;
}

}  // namespace

FitResult PlanVfGrants(const NodeView& v, const Pod& pod, const DeviceRequest& rdma,
                       const std::vector<int>& gpus, const PlacementStrategy& strategy,
                       const std::vector<std::vector<int>>& domains,
                       std::vector<DeviceGrant>* grants) {
  std::vector<int> chosen;
  if (!IsJointVfRequest(v, pod)) {
    if (!strategy.ChooseDevices(v, rdma, domains, &chosen) ||
        static_cast<int>(chosen.size()) != rdma.count)
      return FitResult::Unschedulable("no rdma devices satisfy the request");
    for (int d : chosen) grants->push_back(GrantOn(v, d, rdma));
    return FitResult::Ok();
  }
  std::set<std::string> spanned;
  for (int g : gpus) spanned.insert(v.device(g).topology.pcie_switch);
  DeviceRequest one = rdma;
  one.count = 1;
  for (const std::string& sw : spanned) {
    std::vector<std::vector<int>> domain(1);
    for (int d = 0; d < v.num_devices(); ++d)
      if (NicCanGiveVf(v, d, rdma) && v.device(d).topology.pcie_switch == sw)
        domain[0].push_back(d);
    chosen.clear();
    if (domain[0].empty() || !strategy.ChooseDevices(v, one, domain, &chosen) || chosen.size() != 1)
      return FitResult::Unschedulable(absl::StrFormat(
          "Insufficient rdma virtual functions: PCIe switch %s has no RDMA NIC with a free one",
          sw));
    grants->push_back(GrantOn(v, chosen[0], rdma));
  }
  return FitResult::Ok();
}

}  // namespace gpufleet
