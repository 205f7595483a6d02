// One physical device on a node (a GPU, an RDMA NIC, an FPGA, or any named type), in the shape of
// Koordinator's Device spec entries: type, minor, id, model, health, resources and topology.
#ifndef GPUFLEET_CORE_DEVICE_H_
#define GPUFLEET_CORE_DEVICE_H_

#include <cstdint>
#include <string>

namespace gpufleet {

inline constexpr char kGpu[] = "gpu";
inline constexpr char kRdma[] = "rdma";
inline constexpr char kFpga[] = "fpga";

// Where a device sits. -1 / "" mean unknown; unknown never matches a scope.
struct DeviceTopology {
  int socket = -1;
  int numa_node = -1;
  std::string pcie_switch;  // Koordinator's pcieID: devices with the same value share a switch
  std::string bus_id;
  bool operator==(const DeviceTopology&) const = default;
};

// Capacities use the core's fixed units: `core` is percent of one device (100 = whole), memory is
// bytes. Devices without memory (RDMA, FPGA) have memory_bytes = 0 and are shared by `core`.
struct Device {
  std::string type = kGpu;
  int minor = 0;
  std::string id;      // uuid
  std::string model;   // e.g. "H100", "V100M16"
  bool healthy = true;
  int64_t core = 100;
  int64_t memory_bytes = 0;
  DeviceTopology topology;
  bool operator==(const Device&) const = default;
};

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_DEVICE_H_
