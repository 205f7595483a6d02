// Per-device feasibility of one device request on one node: which devices fit, and under the
// node's constraints (NVLink partition sizes, a required PCIe/NUMA scope) which groups of them a
// choice may come from. Shared by Filter and Plan so both give the same answer.
#ifndef GPUFLEET_ACCOUNTING_DEVICE_FIT_H_
#define GPUFLEET_ACCOUNTING_DEVICE_FIT_H_

#include <vector>

#include "gpufleet/accounting/fit.h"
#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

// When `domains` is null only feasibility is computed (no allocation on the common path).
FitResult FitDeviceRequest(const NodeView& node, const Pod& pod, const DeviceRequest& request,
                           std::vector<std::vector<int>>* domains);

// A cheap necessary condition from node totals; false means the pod certainly does not fit.
bool QuickMayFit(const Pod& pod, const NodeUsage& usage);
// The same with the pod's GPU request (or null) looked up once by the caller.
bool QuickMayFit(const Pod& pod, const DeviceRequest* gpu, const NodeUsage& usage);

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_DEVICE_FIT_H_
