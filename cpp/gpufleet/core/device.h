// One physical device on a node (a GPU, an RDMA NIC, an FPGA, or any named type), in the shape of
// Koordinator's Device spec entries: type, minor, id, model, health, resources and topology.
#ifndef GPUFLEET_CORE_DEVICE_H_
#define GPUFLEET_CORE_DEVICE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// A device that is one instance of a GPU in MIG mode (core/mig.h): its profile ("3g.40gb"), the
// GPU it is carved from, and the first memory slot it spans. An empty profile means "not MIG".
// The parent's memory is kept so the GPU can be written back as it was declared.
struct MigSlot {
  std::string profile;
  int parent_minor = -1;
  std::string parent_id;  // the parent GPU's uuid
  int start = -1;         // memory slot 0..7
  int64_t parent_memory_bytes = 0;
  bool active() const { return !profile.empty(); }
  bool operator==(const MigSlot&) const = default;
};

// One SR-IOV virtual function of an RDMA NIC, as Koordinator's Device CRD lists it: a minor
// (unique on its NIC) and a PCI bus id ("0000:1f:00.2", unique on its NIC).
struct VirtualFunction {
  int minor = 0;
  std::string bus_id;
  bool operator==(const VirtualFunction&) const = default;
};

// Koordinator's vfGroups entry: VFs that share labels (for example a VF type).
struct VfGroup {
  std::map<std::string, std::string> labels;
  std::vector<VirtualFunction> vfs;
  bool operator==(const VfGroup&) const = default;
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
  MigSlot mig;  // set on MIG instances only
  // RDMA NICs only: the NIC's virtual functions (core/rdma_vf.h). A NIC with VFs hands one out
  // with every grant; each is exclusive.
  std::vector<VfGroup> vf_groups;
  bool operator==(const Device&) const = default;
};

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_DEVICE_H_
