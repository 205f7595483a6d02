#include "gpufleet/core/node.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/core/mig.h"
#include "gpufleet/core/rdma_vf.h"

namespace gpufleet {
namespace {

// Two NVLink groups must be disjoint or nested (pairs inside quads inside the whole board);
// groups that cross each other describe no real topology.
bool Laminar(const std::set<int>& a, const std::set<int>& b) {
  size_t common = 0;
  for (int m : a) common += b.count(m);
  return common == 0 || common == a.size() || common == b.size();
}

}  // namespace

bool IsTaintEffect(const std::string& effect) {
  return effect == "NoSchedule" || effect == "PreferNoSchedule" || effect == "NoExecute";
}

absl::Status ValidateNode(const Node& node) {
  if (node.name.empty()) return absl::InvalidArgumentError("node: name is empty");
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrFormat("node %s: %s", node.name, what));
  };
  if (node.cpu_milli < 0) return bad("cpu is negative");
  if (node.memory_bytes < 0) return bad("memory is negative");
  if (node.max_pods < 0) return bad("pods is negative");
  if (node.devices.size() > static_cast<size_t>(kMaxDevicesPerNode))
    return bad(absl::StrFormat("%d devices is more than the %d a node may have",
                               node.devices.size(), kMaxDevicesPerNode));
  if (node.labels.size() > static_cast<size_t>(kMaxNodeListEntries))
    return bad(absl::StrFormat("%d labels is more than %d", node.labels.size(),
                               kMaxNodeListEntries));
  if (node.taints.size() > static_cast<size_t>(kMaxNodeListEntries))
    return bad(absl::StrFormat("%d taints is more than %d", node.taints.size(),
                               kMaxNodeListEntries));
  if (node.nvlink_groups.size() > static_cast<size_t>(kMaxNodeListEntries))
    return bad(absl::StrFormat("%d NVLink groups is more than %d", node.nvlink_groups.size(),
                               kMaxNodeListEntries));
  for (size_t i = 0; i < node.taints.size(); ++i) {
    const Taint& t = node.taints[i];
    if (t.key.empty()) return bad(absl::StrFormat("taints[%d]: key is empty", i));
    if (!IsTaintEffect(t.effect))
      return bad(absl::StrFormat(
          "taints[%d] (%s): effect \"%s\" is not one of NoSchedule, PreferNoSchedule, NoExecute",
          i, t.key, t.effect));
  }
  // MIG first: its messages name the GPU and instance where the generic ones would not.
  if (absl::Status mig = ValidateMig(node); !mig.ok()) return mig;
  if (absl::Status vfs = ValidateVfs(node); !vfs.ok()) return vfs;
  std::set<std::string> ids;
  std::set<std::pair<std::string, int>> seen;
  std::set<int> gpu_minors;
  for (const Device& d : node.devices) {
    if (d.type.empty()) return bad("a device has an empty type");
    if (d.minor < 0) return bad(absl::StrFormat("%s device minor %d is negative", d.type, d.minor));
    if (!seen.insert({d.type, d.minor}).second)
      return bad(absl::StrFormat("duplicate %s device minor %d", d.type, d.minor));
    if (!d.id.empty() && !ids.insert(d.id).second)
      return bad(absl::StrFormat("%s %d: device id \"%s\" is used by another device", d.type,
                                 d.minor, d.id));
    if (d.core != 100)
      return bad(absl::StrFormat("%s %d: core capacity must be 100 (percent of one device), got %d",
                                 d.type, d.minor, d.core));
    if (d.memory_bytes < 0)
      return bad(absl::StrFormat("%s %d: memory is negative", d.type, d.minor));
    // A bound far above any real device keeps ratio x memory and per-node sums inside int64.
    if (d.memory_bytes > kMaxDeviceMemoryBytes)
      return bad(absl::StrFormat("%s %d: memory %d bytes is more than the 1Pi a device may have",
                                 d.type, d.minor, d.memory_bytes));
    if (d.type == kGpu) {
      if (d.memory_bytes == 0)
        return bad(absl::StrFormat("gpu %d: memory must be given and positive", d.minor));
      gpu_minors.insert(d.minor);
    }
  }
  std::vector<std::set<int>> groups;
  for (size_t i = 0; i < node.nvlink_groups.size(); ++i) {
    const auto& group = node.nvlink_groups[i];
    if (group.empty()) return bad(absl::StrFormat("nvlink_groups[%d] is empty", i));
    std::set<int> members;
    for (int minor : group) {
      if (!gpu_minors.count(minor))
        return bad(absl::StrFormat("nvlink_groups[%d] names gpu %d, which the node does not have",
                                   i, minor));
      if (!members.insert(minor).second)
        return bad(absl::StrFormat("nvlink_groups[%d] lists gpu %d twice", i, minor));
    }
    for (size_t k = 0; k < groups.size(); ++k) {
      if (groups[k] == members)
        return bad(absl::StrFormat("nvlink_groups[%d] repeats nvlink_groups[%d]", i, k));
      if (!Laminar(groups[k], members))
        return bad(absl::StrFormat(
            "nvlink_groups[%d] overlaps nvlink_groups[%d] without one containing the other", i,
            k));
    }
    groups.push_back(std::move(members));
  }
  return absl::OkStatus();
}

const char* GpuSharingName(GpuSharing mode) {
  switch (mode) {
    case GpuSharing::kMixed: return "mixed";
    case GpuSharing::kWholeOnly: return "whole";
    case GpuSharing::kSharedOnly: return "shared";
  }
  return "mixed";
}

const char* MigStrategyName(MigStrategy strategy) {
  return strategy == MigStrategy::kSingle ? "single" : "mixed";
}

absl::Status ParseMigStrategy(const std::string& text, MigStrategy* out) {
  if (text == "mixed" || text.empty()) *out = MigStrategy::kMixed;
  else if (text == "single") *out = MigStrategy::kSingle;
  else
    return absl::InvalidArgumentError(
        absl::StrFormat("mig strategy \"%s\" is not one of mixed, single", text));
  return absl::OkStatus();
}

absl::Status ParseGpuSharing(const std::string& text, GpuSharing* out) {
  if (text == "mixed" || text.empty()) *out = GpuSharing::kMixed;
  else if (text == "whole") *out = GpuSharing::kWholeOnly;
  else if (text == "shared") *out = GpuSharing::kSharedOnly;
  else
    return absl::InvalidArgumentError(absl::StrFormat(
        "gpu sharing mode \"%s\" is not one of mixed, whole, shared", text));
  return absl::OkStatus();
}

}  // namespace gpufleet
