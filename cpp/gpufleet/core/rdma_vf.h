// SR-IOV virtual functions of RDMA NICs: a NIC's VFs counted and addressed in one flat order
// (groups in order, VFs in order within a group), and the checks a node's declaration must pass.
#ifndef GPUFLEET_CORE_RDMA_VF_H_
#define GPUFLEET_CORE_RDMA_VF_H_

#include "absl/status/status.h"
#include "gpufleet/core/device.h"
#include "gpufleet/core/node.h"

namespace gpufleet {

// Bounds far above real NICs (a ConnectX-7 offers at most 127 VFs per port).
inline constexpr int kMaxVfsPerDevice = 1024;

int VfCount(const Device& device);
// The k-th VF in flat order; k must be below VfCount.
const VirtualFunction& VfAt(const Device& device, int k);
// Flat index of the VF with this minor and bus id, or -1.
int FindVf(const Device& device, const VirtualFunction& vf);

// VFs only on rdma devices; per NIC no duplicate minor or bus id, no negative minor, no empty
// bus id, at most kMaxVfsPerDevice. The message names the node, the device and the field:
//   node n1: rdma 2: vfGroups[0].vfs[3].busID: "0000:1f:00.2" is used by another VF of this NIC
absl::Status ValidateVfs(const Node& node);

// True when some device of the node carries VFs.
bool NodeHasVfs(const Node& node);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_RDMA_VF_H_
