// NVIDIA Multi-Instance GPU geometry, as data: which GPU instance profiles each GPU model offers,
// their size in compute and memory slices, how many of each fit, and the memory slots a profile
// may start at. Nothing but tables here; core/mig.h reads them.
//
// Source: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
// (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html): the
// per-product tables (fraction of memory, fraction of SMs, number of instances available) and
// the placements that `nvidia-smi mig -lgipp` lists (start slots, and the slots a profile spans,
// in eighths of the memory). The profile ids are NVML's GPU instance profile ids, the ones
// `nvidia-smi mig -lgip` prints (19 for 1g.5gb ... 0 for 7g.40gb).
//
// Every model here has 7 compute slices and 8 memory slots. A profile spans `memory_slices`
// consecutive slots from its start; instances on one GPU may not share a slot, and their
// compute slices add up to at most 7. The "+me" profiles carry the media engines; one per GPU.
// The memory of an instance is the GPU's memory times memory_slices / 8 (the nominal fraction;
// nvidia-smi reports slightly less usable memory).
#ifndef GPUFLEET_CORE_MIG_GEOMETRY_DATA_H_
#define GPUFLEET_CORE_MIG_GEOMETRY_DATA_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace gpufleet::mig_data {

struct ProfileRow {
  std::string_view name;   // e.g. "3g.40gb"
  int nvml_profile_id;     // NVML / nvidia-smi GPU instance profile id
  int compute_slices;      // of 7
  int memory_slices;       // of 8: how many memory slots an instance spans
  int max_instances;       // "Number of Instances Available"
  uint8_t start_slots;     // bit k set: the profile may start at memory slot k
};

struct ModelRow {
  std::string_view name;                    // the canonical model name in scenarios
  std::array<std::string_view, 4> aliases;  // other spellings (NVML product names); "" unused
  int64_t memory_gib;                       // nominal memory of the whole GPU
  std::array<ProfileRow, 7> profiles;
};

inline constexpr int kComputeSlices = 7;
inline constexpr int kMemorySlots = 8;

// Start-slot masks ({0..6}, {0,2,4,6}, {0,2,4}, {0,4}, {0}).
inline constexpr uint8_t kAnyOf7 = 0b0111'1111;
inline constexpr uint8_t kEven4 = 0b0101'0101;
inline constexpr uint8_t kEven3 = 0b0001'0101;
inline constexpr uint8_t kHalves = 0b0001'0001;
inline constexpr uint8_t kFirst = 0b0000'0001;

// A100 80GB and H100 80GB publish the same profile table.
inline constexpr std::array<ProfileRow, 7> k80GbProfiles = {{
    {"1g.10gb", 19, 1, 1, 7, kAnyOf7},
    {"1g.10gb+me", 20, 1, 1, 1, kAnyOf7},
    {"1g.20gb", 15, 1, 2, 4, kEven4},
    {"2g.20gb", 14, 2, 2, 3, kEven3},
    {"3g.40gb", 9, 3, 4, 2, kHalves},
    {"4g.40gb", 5, 4, 4, 1, kFirst},
    {"7g.80gb", 0, 7, 8, 1, kFirst}}};

inline constexpr std::array<ModelRow, 4> kModels = {{
    {"A100-40GB",
     {"A100-SXM4-40GB", "A100-PCIE-40GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"},
     40,
     {{{"1g.5gb", 19, 1, 1, 7, kAnyOf7},
       {"1g.5gb+me", 20, 1, 1, 1, kAnyOf7},
       {"1g.10gb", 15, 1, 2, 4, kEven4},
       {"2g.10gb", 14, 2, 2, 3, kEven3},
       {"3g.20gb", 9, 3, 4, 2, kHalves},
       {"4g.20gb", 5, 4, 4, 1, kFirst},
       {"7g.40gb", 0, 7, 8, 1, kFirst}}}},
    {"A100-80GB",
     {"A100-SXM4-80GB", "A100-PCIE-80GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"},
     80,
     k80GbProfiles},
    {"H100-80GB",
     {"H100-SXM5-80GB", "H100-PCIE-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"},
     80,
     k80GbProfiles},
    {"H200-141GB",
     {"H200-SXM5-141GB", "H200-NVL-141GB", "NVIDIA H200", "NVIDIA H200 NVL"},
     141,
     {{{"1g.18gb", 19, 1, 1, 7, kAnyOf7},
       {"1g.18gb+me", 20, 1, 1, 1, kAnyOf7},
       {"1g.35gb", 15, 1, 2, 4, kEven4},
       {"2g.35gb", 14, 2, 2, 3, kEven3},
       {"3g.71gb", 9, 3, 4, 2, kHalves},
       {"4g.71gb", 5, 4, 4, 1, kFirst},
       {"7g.141gb", 0, 7, 8, 1, kFirst}}}},
}};

}  // namespace gpufleet::mig_data

#endif  // GPUFLEET_CORE_MIG_GEOMETRY_DATA_H_
