// Per-device feasibility of one device request on one node: which devices fit, and under the
// node's constraints (NVLink partition sizes, a required PCIe/NUMA scope) which groups of them a
// choice may come from. Shared by Filter and Plan so both give the same answer.
#ifndef GPUFLEET_ACCOUNTING_DEVICE_FIT_H_
#define GPUFLEET_ACCOUNTING_DEVICE_FIT_H_

#include <set>
#include <string>
#include <vector>

#include "gpufleet/accounting/fit.h"
#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

// When `domains` is null only feasibility is computed (no allocation on the common path).
FitResult FitDeviceRequest(const NodeView& node, const Pod& pod, const DeviceRequest& request,
                           std::vector<std::vector<int>>* domains);

// SR-IOV VFs (Koordinator's joint GPU+RDMA allocation). On a node whose RDMA NICs carry virtual
// functions, every rdma grant holds one VF. A pod asking for GPUs and rdma there gets one VF on a
// NIC of each PCIe switch its GPUs span, so a GPU counts as fitting only when its switch has a
// NIC with a free VF (and the rdma request is then served by construction).
bool NodeHasVfNics(const NodeView& node);
bool IsJointVfRequest(const NodeView& node, const Pod& pod);
// A NIC that can serve `rdma` with a VF now: healthy, a free VF, enough free core.
bool NicCanGiveVf(const NodeView& node, int d, const DeviceRequest& rdma);
// The PCIe switches with such a NIC. Unresolvable when a GPU or VF NIC has no PCIe switch, or the
// rdma request asks for more than one NIC's worth (the count follows the GPUs' switches).
FitResult VfSwitches(const NodeView& node, const Pod& pod, const DeviceRequest& rdma,
                     std::set<std::string>* switches);

// A cheap necessary condition from node totals; false means the pod certainly does not fit.
bool QuickMayFit(const Pod& pod, const NodeUsage& usage);
// The same with the pod's GPU request (or null) looked up once by the caller.
bool QuickMayFit(const Pod& pod, const DeviceRequest* gpu, const NodeUsage& usage);

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_DEVICE_FIT_H_
