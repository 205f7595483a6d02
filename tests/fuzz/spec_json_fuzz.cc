// Nodes and pods from the scenario format's JSON. Any bytes: a node or pod, or an error naming
// the object. A node that reads passes ValidateNode, and NodeToJson writes it back to the same
// node; a pod that reads satisfies the request invariants.
#include <cstdint>

#include "fuzz_util.h"
#include "gpufleet/io/spec_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::optional<Json> parsed = fuzz::ReadJson(data, size);
  if (!parsed) return 0;
  const Json& j = *parsed;

  absl::StatusOr<Node> node = NodeFromJson(j);
  if (node.ok()) {
    FUZZ_CHECK(ValidateNode(*node).ok(), "%s", ValidateNode(*node).ToString().c_str());
    // Integers are taken exactly or rejected, never wrapped.
    if (auto d = j.find("devices"); d != j.end() && d->is_array())
      for (size_t i = 0; i < d->size(); ++i)
        if (auto m = (*d)[i].find("minor"); m != (*d)[i].end() && !m->is_null())
          FUZZ_CHECK(fuzz::SameInteger(*m, node->devices[i].minor), "minor %s read as %d",
                     m->dump().c_str(), node->devices[i].minor);
    const Json written = NodeToJson(*node);
    absl::StatusOr<Node> again = NodeFromJson(written);
    FUZZ_CHECK(again.ok(), "NodeToJson output does not read back: %s\n  %s",
               again.status().ToString().c_str(), written.dump().c_str());
    FUZZ_CHECK(*again == *node, "node changed on a round trip:\n  %s\n  %s",
               written.dump().c_str(), NodeToJson(*again).dump().c_str());
  } else {
    FUZZ_CHECK(fuzz::IsUserError(node.status()) && !node.status().message().empty(), "%s",
               node.status().ToString().c_str());
  }

  absl::StatusOr<Pod> pod = PodFromJson(j);
  if (pod.ok()) {
    FUZZ_CHECK(!pod->name.empty(), "pod without a name");
    if (auto it = j.find("priority"); it != j.end() && !it->is_null())
      FUZZ_CHECK(fuzz::SameInteger(*it, pod->priority), "priority %s read as %d",
                 it->dump().c_str(), pod->priority);
    for (const DeviceRequest& r : pod->devices)
      FUZZ_CHECK(r.count >= 1 && r.core >= 0 && r.core <= 100 && r.memory_ratio >= 0 &&
                     r.memory_ratio <= 100 && r.memory_bytes >= 0,
                 "bad %s request", r.type.c_str());
  } else {
    FUZZ_CHECK(fuzz::IsUserError(pod.status()) && !pod.status().message().empty(), "%s",
               pod.status().ToString().c_str());
  }
  return 0;
}
