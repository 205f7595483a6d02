// Device choice for an rdma request on a node whose NICs carry SR-IOV virtual functions
// (accounting/device_fit.h states the rule Filter applies). With GPUs in the same pod, one NIC per
// PCIe switch the chosen GPUs span, each giving one VF (Koordinator's joint allocation with the
// same-PCIe scope); without GPUs, `count` NICs chosen by the strategy, one VF each. The strategy
// orders the NICs; the VF taken on a NIC is its free one with the lowest PCI bus id, as
// Koordinator picks.
#ifndef GPUFLEET_PLACEMENT_RDMA_VF_PLAN_H_
#define GPUFLEET_PLACEMENT_RDMA_VF_PLAN_H_

#include <vector>

#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/fit.h"
#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

// Appends the rdma grants (with their VFs) to `grants`; `gpus` are the local indices of the GPUs
// already chosen for the pod (empty for an RDMA-only pod). The request has passed its device fit
// (FitDeviceRequest), which gave `domains`: the NICs a request without GPUs chooses from.
FitResult PlanVfGrants(const NodeView& node, const Pod& pod, const DeviceRequest& rdma,
                       const std::vector<int>& gpus, const PlacementStrategy& strategy,
                       const std::vector<std::vector<int>>& domains,
                       std::vector<DeviceGrant>* grants);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_RDMA_VF_PLAN_H_
