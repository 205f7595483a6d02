#include "gpufleet/io/snapshot.h"

#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/json_text.h"
#include "gpufleet/core/rdma_vf.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet {

std::string SaveSnapshot(const ClusterState& state) {
  Json j;
  j["version"] = 1;
  Json nodes = Json::array();
  for (int i = 0; i < state.num_nodes(); ++i) nodes.push_back(NodeToJson(state.node(i)));
  j["nodes"] = nodes;
  Json allocations = Json::array();
  for (const Allocation* a : state.Allocations()) {
    Json devices = Json::array();
    for (const DeviceGrant& g : a->devices) {
      devices.push_back({{"type", g.type}, {"minor", g.minor}, {"core", g.core},
                         {"memory_bytes", g.memory_bytes}});
      if (g.vfs.empty()) continue;
      Json vfs = Json::array();
      for (const VirtualFunction& vf : g.vfs) vfs.push_back({{"minor", vf.minor}, {"busID", vf.bus_id}});
      devices.back()["vfs"] = vfs;
    }
    allocations.push_back({{"pod", a->pod},
                           {"node", a->node},
                           {"cpu_milli", a->cpu_milli},
                           {"memory_bytes", a->memory_bytes},
                           {"state", a->state == AllocationState::kBound ? "Bound" : "Reserved"},
                           {"assume_time_ns", a->assume_time_ns},
                           {"devices", devices}});
  }
  j["allocations"] = allocations;
  return j.dump();
}

absl::StatusOr<ClusterState> LoadSnapshot(const std::string& text) {
  ASSIGN_OR_RETURN(Json j, ParseJsonText(text, "snapshot"));
  if (!j.is_object()) return absl::InvalidArgumentError("snapshot: not a JSON object");
  RETURN_IF_ERROR(CheckKnownKeys(j, "snapshot", {"version", "nodes", "allocations"}));
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || *version != 1)
    return absl::InvalidArgumentError("snapshot: unsupported version (expected 1)");
  ClusterState state;
  for (const Json& n : j.value("nodes", Json::array())) {
    ASSIGN_OR_RETURN(Node node, NodeFromJson(n));
    RETURN_IF_ERROR(state.AddNode(node));
  }
  // get<int64_t>() on a float is undefined behaviour when out of range, and wraps 2^64-1 to -1.
  auto integer = [](const Json& object, const char* key) -> int64_t {
    const Json& v = object.at(key);
    if (!IsIntegerIn<int64_t>(v))
      throw std::invalid_argument(absl::StrCat(key, " is not an integer: ", v.dump()));
    return v.get<int64_t>();
  };
  try {
    for (const Json& a : j.value("allocations", Json::array())) {
      Allocation alloc;
      alloc.pod = a.at("pod").get<std::string>();
      alloc.node = a.at("node").get<std::string>();
      alloc.cpu_milli = integer(a, "cpu_milli");
      alloc.memory_bytes = integer(a, "memory_bytes");
      alloc.assume_time_ns = integer(a, "assume_time_ns");
      for (const Json& g : a.at("devices")) {
        // Read wide first: a huge minor must not wrap onto a real device.
        const int64_t minor = integer(g, "minor");
        if (minor < 0 || minor > std::numeric_limits<int>::max())
          return absl::InvalidArgumentError(absl::StrFormat(
              "snapshot: allocation %s: device minor %d is out of range", alloc.pod, minor));
        DeviceGrant grant{g.at("type").get<std::string>(), static_cast<int>(minor),
                          integer(g, "core"), integer(g, "memory_bytes"), {}};
        if (auto vfs = g.find("vfs"); vfs != g.end()) {
          if (!vfs->is_array() || vfs->size() > static_cast<size_t>(kMaxVfsPerDevice))
            return absl::InvalidArgumentError(absl::StrFormat(
                "snapshot: allocation %s: %s %d: vfs is not a list of at most %d", alloc.pod,
                grant.type, grant.minor, kMaxVfsPerDevice));
          for (const Json& vf : *vfs) {
            const int64_t vf_minor = integer(vf, "minor");
            if (vf_minor < 0 || vf_minor > std::numeric_limits<int>::max())
              return absl::InvalidArgumentError(absl::StrFormat(
                  "snapshot: allocation %s: VF minor %d is out of range", alloc.pod, vf_minor));
            grant.vfs.push_back({static_cast<int>(vf_minor), vf.at("busID").get<std::string>()});
          }
        }
        alloc.devices.push_back(std::move(grant));
      }
      const std::string phase = a.at("state").get<std::string>();
      if (phase != "Bound" && phase != "Reserved")
        return absl::InvalidArgumentError(absl::StrFormat(
            "snapshot: allocation %s: state \"%s\" is not Bound or Reserved", alloc.pod, phase));
      RETURN_IF_ERROR(state.Reserve(alloc));
      if (phase == "Bound") RETURN_IF_ERROR(state.Commit(alloc.pod));
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("snapshot: malformed allocation: ", e.what()));
  }
  return state;
}

}  // namespace gpufleet
