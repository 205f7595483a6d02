// What a pod holds on a node: cpu, memory and a share of specific devices.
#ifndef GPUFLEET_ACCOUNTING_ALLOCATION_H_
#define GPUFLEET_ACCOUNTING_ALLOCATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpufleet/core/device.h"

namespace gpufleet {

struct DeviceGrant {
  std::string type;
  int minor = 0;
  int64_t core = 0;          // percent of the device
  int64_t memory_bytes = 0;  // bytes of the device's memory
  // SR-IOV virtual functions held on an RDMA NIC (core/rdma_vf.h), each exclusively.
  std::vector<VirtualFunction> vfs;
  bool operator==(const DeviceGrant&) const = default;
};

enum class AllocationState { kReserved = 0, kBound = 1 };

struct Allocation {
  std::string pod;
  std::string node;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::vector<DeviceGrant> devices;
  AllocationState state = AllocationState::kReserved;
  int64_t assume_time_ns = 0;  // when it was reserved (gpushare's ASSUME_TIME)
  bool operator==(const Allocation&) const = default;
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_ALLOCATION_H_
