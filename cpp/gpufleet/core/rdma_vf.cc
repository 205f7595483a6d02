#include "gpufleet/core/rdma_vf.h"

#include <set>
#include <string>

#include "absl/strings/str_format.h"

namespace gpufleet {

int VfCount(const Device& device) {
  int n = 0;
  for (const VfGroup& g : device.vf_groups) n += static_cast<int>(g.vfs.size());
  return n;
}

const VirtualFunction& VfAt(const Device& device, int k) {
  for (const VfGroup& g : device.vf_groups) {
    if (k < static_cast<int>(g.vfs.size())) return g.vfs[k];
    k -= static_cast<int>(g.vfs.size());
  }
  return device.vf_groups.back().vfs.back();  // unreachable for a valid k
}

int FindVf(const Device& device, const VirtualFunction& vf) {
  int k = 0;
  for (const VfGroup& g : device.vf_groups)
    for (const VirtualFunction& v : g.vfs) {
      if (v == vf) return k;
      ++k;
    }
  return -1;
}

bool NodeHasVfs(const Node& node) {
  for (const Device& d : node.devices)
    if (!d.vf_groups.empty()) return true;
  return false;
}

absl::Status ValidateVfs(const Node& node) {
  for (const Device& d : node.devices) {
    if (d.vf_groups.empty()) continue;
    auto bad = [&](const std::string& field, const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("node %s: %s %d: %s: %s", node.name, d.type, d.minor, field, why));
    };
    if (d.type != kRdma)
      return bad("vfGroups", "only rdma devices have virtual functions");
    if (VfCount(d) > kMaxVfsPerDevice || d.vf_groups.size() > static_cast<size_t>(kMaxVfsPerDevice))
      return bad("vfGroups", absl::StrFormat("%d VFs in %d groups is more than the %d a NIC may have",
                                             VfCount(d), d.vf_groups.size(), kMaxVfsPerDevice));
    std::set<int> minors;
    std::set<std::string> buses;
    for (size_t gi = 0; gi < d.vf_groups.size(); ++gi) {
      const VfGroup& g = d.vf_groups[gi];
      for (size_t vi = 0; vi < g.vfs.size(); ++vi) {
        const VirtualFunction& vf = g.vfs[vi];
        const std::string at = absl::StrFormat("vfGroups[%d].vfs[%d]", gi, vi);
        if (vf.minor < 0)
          return bad(at + ".minor", absl::StrFormat("%d is negative", vf.minor));
        if (vf.bus_id.empty()) return bad(at + ".busID", "is empty");
        if (!minors.insert(vf.minor).second)
          return bad(at + ".minor",
                     absl::StrFormat("%d is used by another VF of this NIC", vf.minor));
        if (!buses.insert(vf.bus_id).second)
          return bad(at + ".busID",
                     absl::StrFormat("\"%s\" is used by another VF of this NIC", vf.bus_id));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gpufleet
