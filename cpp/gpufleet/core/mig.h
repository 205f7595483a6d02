// Multi-Instance GPU: the geometry of each GPU model (from mig_geometry_data.h) and the checks a
// node's MIG instances must pass. Each instance is a device of its own (Device::mig says which
// GPU and slots it occupies), so the accounting and placement treat it like any other device;
// the GPU itself is never a device while it is in MIG mode.
#ifndef GPUFLEET_CORE_MIG_H_
#define GPUFLEET_CORE_MIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/core/mig_geometry_data.h"

namespace gpufleet {

struct Node;

using MigModel = mig_data::ModelRow;
using MigProfile = mig_data::ProfileRow;

// Device types of instances in the mixed strategy: "mig-3g.40gb" for nvidia.com/mig-3g.40gb.
inline constexpr char kMigTypePrefix[] = "mig-";
std::string MigDeviceType(std::string_view profile);

// The model by its name or one of its aliases; null if it has no MIG geometry.
const MigModel* FindMigModel(std::string_view model);
// The profile on that model; null if the model does not offer it.
const MigProfile* FindMigProfile(const MigModel& model, std::string_view profile);
// Whether any model offers the profile (what a request may name before a node is chosen).
bool IsKnownMigProfile(std::string_view profile);
// "A100-40GB, A100-80GB, ..." and "1g.10gb, ..." for error messages.
std::string MigModelNames();
std::string MigProfileNames(const MigModel& model);

// An instance's device minor: unique per node, and readable back (parent GPU, start slot).
inline int MigInstanceMinor(int parent_minor, int start) {
  return parent_minor * mig_data::kMemorySlots + start;
}

// The checks behind ValidateNode for a node's MIG instances, grouped by parent GPU: a model with
// MIG geometry, profiles that model offers, allowed start slots, no two instances sharing a
// memory slot, at most 7 compute slices and the published instance count per profile, device
// type and minor as the strategy derives them, a parent that is not also a whole GPU; with the
// single strategy every GPU split, one profile on the node, whole-only sharing, no NVLink groups.
// Messages name the node, the GPU and the instance: "node n1: gpu 0 (A100-80GB) mig[1] 3g.40gb
// at slot 2: ...".
absl::Status ValidateMig(const Node& node);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_MIG_H_
