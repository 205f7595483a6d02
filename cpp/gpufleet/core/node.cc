#include "gpufleet/core/node.h"

#include <set>
#include <utility>

#include "absl/strings/str_format.h"

namespace gpufleet {
namespace {
constexpr int64_t kMaxDeviceMemory = int64_t{1} << 50;  // 1 PiB
}  // namespace

absl::Status ValidateNode(const Node& node) {
  if (node.name.empty()) return absl::InvalidArgumentError("node: name is empty");
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrFormat("node %s: %s", node.name, what));
  };
  if (node.cpu_milli < 0) return bad("cpu is negative");
  if (node.memory_bytes < 0) return bad("memory is negative");
  if (node.max_pods < 0) return bad("pods is negative");
  std::set<std::pair<std::string, int>> seen;
  std::set<int> gpu_minors;
  for (const Device& d : node.devices) {
    if (d.type.empty()) return bad("a device has an empty type");
    if (d.minor < 0) return bad(absl::StrFormat("%s device minor %d is negative", d.type, d.minor));
    if (!seen.insert({d.type, d.minor}).second)
      return bad(absl::StrFormat("duplicate %s device minor %d", d.type, d.minor));
    if (d.core != 100)
      return bad(absl::StrFormat("%s %d: core capacity must be 100 (percent of one device), got %d",
                                 d.type, d.minor, d.core));
    if (d.memory_bytes < 0)
      return bad(absl::StrFormat("%s %d: memory is negative", d.type, d.minor));
    // A bound far above any real device keeps ratio x memory and per-node sums inside int64.
    if (d.memory_bytes > kMaxDeviceMemory)
      return bad(absl::StrFormat("%s %d: memory %d bytes is more than the 1Pi a device may have",
                                 d.type, d.minor, d.memory_bytes));
    if (d.type == kGpu) {
      if (d.memory_bytes == 0)
        return bad(absl::StrFormat("gpu %d: memory must be given and positive", d.minor));
      gpu_minors.insert(d.minor);
    }
  }
  for (const auto& group : node.nvlink_groups) {
    if (group.empty()) return bad("an NVLink group is empty");
    std::set<int> members;
    for (int minor : group) {
      if (!gpu_minors.count(minor))
        return bad(absl::StrFormat("NVLink group names gpu %d, which the node does not have", minor));
      if (!members.insert(minor).second)
        return bad(absl::StrFormat("NVLink group lists gpu %d twice", minor));
    }
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
