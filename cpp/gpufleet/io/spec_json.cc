#include "gpufleet/io/spec_json.h"

#include <limits>
#include <map>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/mig.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/rdma_vf.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet {
namespace {

// The "gpus" shorthand's count; far above any real node.

absl::Status FieldError(const std::string& owner, const std::string& field,
                        const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s: %s", owner, field, why));
}

// Quantities may be JSON strings or numbers.
absl::StatusOr<std::string> QuantityText(const Json& v, const std::string& owner,
                                         const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return v.dump();
  return FieldError(owner, field, "expected a quantity string or number, got " + v.dump());
}

// A quantity in `resource`'s unit (ParseResourceQuantity): milli-cores for cpu, whole numbers
// for pods and extended resources (koordinator.sh/gpu-core, ...), bytes for memory.
absl::StatusOr<int64_t> QuantityField(const Json& j, const std::string& key,
                                      const std::string& resource, int64_t fallback,
                                      const std::string& owner) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  ASSIGN_OR_RETURN(std::string text, QuantityText(*it, owner, key));
  auto v = ParseResourceQuantity(resource, text);
  if (!v.ok()) {
    // The field names the value already; the resource shows where its rule applies.
    absl::string_view message = v.status().message();
    absl::ConsumePrefix(&message, absl::StrCat(resource, ": "));
    return FieldError(owner, key, std::string(message));
  }
  return *v;
}

absl::Status TooMany(const std::string& owner, const std::string& field, size_t n, size_t limit) {
  return FieldError(owner, field, absl::StrFormat("%d entries is more than the %d allowed", n, limit));
}

template <typename T>
absl::StatusOr<T> Typed(const Json& j, const std::string& key, T fallback, const std::string& owner) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, int>) {
    // JSON would convert silently (4294967296 -> 0, 1.5 -> 1, 2^64-1 -> -1); only exact ints are
    // accepted.
    if (!it->is_number_integer() ||
        (it->is_number_unsigned() &&
         it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max())) ||
        it->get<int64_t>() < std::numeric_limits<int>::min() ||
        it->get<int64_t>() > std::numeric_limits<int>::max())
      return FieldError(owner, key, "expected an integer, got " + it->dump());
  }
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    return FieldError(owner, key, "wrong type: " + it->dump());
  }
}

absl::StatusOr<std::map<std::string, std::string>> StringMap(const Json& j, const std::string& key,
                                                            const std::string& owner) {
  std::map<std::string, std::string> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_object()) return FieldError(owner, key, "expected an object");
  if (it->size() > static_cast<size_t>(kMaxNodeListEntries))
    return TooMany(owner, key, it->size(), kMaxNodeListEntries);
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    if (kv->is_string()) out[kv.key()] = kv->get<std::string>();
    else if (kv->is_number() || kv->is_boolean()) out[kv.key()] = kv->dump();
    else return FieldError(owner, absl::StrCat(key, ".", kv.key()), "expected a string");
  }
  return out;
}

// Koordinator's vfGroups: [{"labels": {...}, "vfs": [{"minor", "busID"}]}]. Whether the VFs
// make sense on this device (rdma only, no duplicates) is ValidateVfs's, run with the node's checks.
absl::StatusOr<std::vector<VfGroup>> VfGroupsFromJson(const Json& j, const std::string& owner) {
  std::vector<VfGroup> groups;
  auto it = j.find("vfGroups");
  if (it == j.end() || it->is_null()) return groups;
  if (!it->is_array()) return FieldError(owner, "vfGroups", "expected a list");
  if (it->size() > static_cast<size_t>(kMaxVfsPerDevice))
    return TooMany(owner, "vfGroups", it->size(), kMaxVfsPerDevice);
  size_t total = 0;
  for (size_t gi = 0; gi < it->size(); ++gi) {
    const Json& g = (*it)[gi];
    const std::string at = absl::StrFormat("%s vfGroups[%d]", owner, gi);
    if (!g.is_object()) return FieldError(owner, absl::StrFormat("vfGroups[%d]", gi), "expected an object");
    RETURN_IF_ERROR(CheckKnownKeys(g, at, {"labels", "vfs"}));
    VfGroup group;
    ASSIGN_OR_RETURN(group.labels, StringMap(g, "labels", at));
    auto vfs = g.find("vfs");
    if (vfs != g.end() && !vfs->is_null()) {
      if (!vfs->is_array()) return FieldError(at, "vfs", "expected a list");
      total += vfs->size();
      if (total > static_cast<size_t>(kMaxVfsPerDevice))
        return FieldError(owner, "vfGroups",
                          absl::StrFormat("more than the %d VFs a NIC may have", kMaxVfsPerDevice));
      for (size_t vi = 0; vi < vfs->size(); ++vi) {
        const Json& v = (*vfs)[vi];
        const std::string vat = absl::StrFormat("%s vfs[%d]", at, vi);
        if (!v.is_object()) return FieldError(at, absl::StrFormat("vfs[%d]", vi), "expected an object");
        RETURN_IF_ERROR(CheckKnownKeys(v, vat, {"minor", "busID"}));
        if (!v.contains("minor")) return FieldError(vat, "minor", "is missing");
        if (!v.contains("busID")) return FieldError(vat, "busID", "is missing");
        VirtualFunction vf;
        ASSIGN_OR_RETURN(vf.minor, Typed<int>(v, "minor", 0, vat));
        if (!v["busID"].is_string()) return FieldError(vat, "busID", "expected a string, got " + v["busID"].dump());
        vf.bus_id = v["busID"].get<std::string>();
        group.vfs.push_back(std::move(vf));
      }
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

Json VfGroupsToJson(const std::vector<VfGroup>& groups) {
  Json out = Json::array();
  for (const VfGroup& g : groups) {
    Json vfs = Json::array();
    for (const VirtualFunction& vf : g.vfs) vfs.push_back({{"minor", vf.minor}, {"busID", vf.bus_id}});
    out.push_back({{"labels", g.labels}, {"vfs", vfs}});
  }
  return out;
}

absl::StatusOr<Device> DeviceFromJson(const Json& j, const std::string& owner) {
  if (!j.is_object()) return FieldError(owner, "device", "expected an object");
  RETURN_IF_ERROR(
      CheckKnownKeys(j, owner, {"type", "minor", "id", "model", "health", "resources", "topology", "memory", "mig",
                      "vfGroups"}));
  Device d;
  ASSIGN_OR_RETURN(d.type, Typed<std::string>(j, "type", kGpu, owner));
  ASSIGN_OR_RETURN(d.minor, Typed<int>(j, "minor", 0, owner));
  ASSIGN_OR_RETURN(d.id, Typed<std::string>(j, "id", "", owner));
  ASSIGN_OR_RETURN(d.model, Typed<std::string>(j, "model", "", owner));
  ASSIGN_OR_RETURN(d.healthy, Typed<bool>(j, "health", true, owner));
  Json resources = j.value("resources", Json::object());
  if (!resources.is_object()) return FieldError(owner, "resources", "expected an object");
  std::string core_key = d.type == kGpu ? kKoordGpuCore : absl::StrCat("koordinator.sh/", d.type);
  RETURN_IF_ERROR(CheckKnownKeys(resources, owner + " resources",
                                 {core_key, kKoordGpuMemory, kKoordGpuMemoryRatio}));
  ASSIGN_OR_RETURN(d.core, QuantityField(resources, core_key, core_key, 100, owner + " resources"));
  ASSIGN_OR_RETURN(d.memory_bytes, QuantityField(resources, kKoordGpuMemory, kKoordGpuMemory, 0,
                                                 owner + " resources"));
  // A device's own memory-ratio is all of it: any other value describes no device.
  ASSIGN_OR_RETURN(int64_t ratio, QuantityField(resources, kKoordGpuMemoryRatio,
                                                kKoordGpuMemoryRatio, 100, owner + " resources"));
  if (ratio != 100)
    return FieldError(owner + " resources", kKoordGpuMemoryRatio,
                      absl::StrFormat("a device has 100 (percent of itself), got %d", ratio));
  // Shorthand: "memory" beside "type".
  if (d.memory_bytes == 0) {
    ASSIGN_OR_RETURN(d.memory_bytes, QuantityField(j, "memory", kKoordGpuMemory, 0, owner));
  }
  if (auto t = j.find("topology"); t != j.end() && !t->is_null()) {
    if (!t->is_object()) return FieldError(owner, "topology", "expected an object");
    RETURN_IF_ERROR(
        CheckKnownKeys(*t, owner + " topology", {"socketID", "nodeID", "pcieID", "busID"}));
    ASSIGN_OR_RETURN(d.topology.socket, Typed<int>(*t, "socketID", -1, owner + " topology"));
    ASSIGN_OR_RETURN(d.topology.numa_node, Typed<int>(*t, "nodeID", -1, owner + " topology"));
    ASSIGN_OR_RETURN(d.topology.pcie_switch,
                     Typed<std::string>(*t, "pcieID", "", owner + " topology"));
    ASSIGN_OR_RETURN(d.topology.bus_id, Typed<std::string>(*t, "busID", "", owner + " topology"));
  }
  ASSIGN_OR_RETURN(d.vf_groups, VfGroupsFromJson(j, owner));
  return d;
}


// Instance minors are 8 x the GPU's minor + slot; this keeps them inside int.
constexpr int kMaxMigParentMinor = std::numeric_limits<int>::max() / mig_data::kMemorySlots - 1;

// One MIG instance entry: {"profile", "start", "id", "health", "memory"}; memory defaults to
// the profile's share of the GPU (NVML reports a little less, and the inventory records that).
struct MigEntry {
  std::string profile;
  int start = -1;
  std::string id;
  bool healthy = true;
  int64_t memory_bytes = 0;
};

absl::StatusOr<std::vector<MigEntry>> MigEntries(const Json& list, const std::string& owner) {
  if (!list.is_array()) return FieldError(owner, "mig", "expected a list of instances");
  if (list.size() > static_cast<size_t>(mig_data::kMemorySlots))
    return FieldError(owner, "mig",
                      absl::StrFormat("%d instances is more than the %d a GPU may hold",
                                      list.size(), mig_data::kMemorySlots));
  if (list.empty())
    return FieldError(owner, "mig", "lists no instances (a GPU in MIG mode with none is not "
                                    "schedulable; leave \"mig\" out to offer it whole)");
  std::vector<MigEntry> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = absl::StrFormat("%s mig[%d]", owner, i);
    if (!list[i].is_object()) return FieldError(where, "instance", "expected an object");
    RETURN_IF_ERROR(
        CheckKnownKeys(list[i], where, {"profile", "start", "id", "health", "memory"}));
    MigEntry e;
    ASSIGN_OR_RETURN(e.profile, Typed<std::string>(list[i], "profile", "", where));
    if (e.profile.empty()) return FieldError(where, "profile", "is missing (e.g. \"3g.40gb\")");
    if (!list[i].contains("start"))
      return FieldError(where, "start", "is missing (the first memory slot, 0..7)");
    ASSIGN_OR_RETURN(e.start, Typed<int>(list[i], "start", -1, where));
    if (e.start < 0 || e.start >= mig_data::kMemorySlots)
      return FieldError(where, "start", absl::StrFormat("%d is not a memory slot (0..%d)", e.start,
                                                        mig_data::kMemorySlots - 1));
    ASSIGN_OR_RETURN(e.id, Typed<std::string>(list[i], "id", "", where));
    ASSIGN_OR_RETURN(e.healthy, Typed<bool>(list[i], "health", true, where));
    ASSIGN_OR_RETURN(e.memory_bytes, QuantityField(list[i], "memory", kKoordGpuMemory, 0, where));
    out.push_back(std::move(e));
  }
  return out;
}

// A GPU in MIG mode becomes its instances; the strategy names their type and
// ValidateNode checks the geometry.
void AppendMigInstances(const Device& gpu, const std::vector<MigEntry>& entries,
                        MigStrategy strategy, std::vector<Device>* out) {
  const MigModel* model = FindMigModel(gpu.model);
  int64_t parent_memory = gpu.memory_bytes;
  if (parent_memory == 0 && model != nullptr) parent_memory = model->memory_gib << 30;
  for (const MigEntry& e : entries) {
    Device d;
    d.type = strategy == MigStrategy::kSingle ? std::string(kGpu) : MigDeviceType(e.profile);
    d.minor = MigInstanceMinor(gpu.minor, e.start);
    d.id = e.id;
    d.model = gpu.model;
    d.healthy = gpu.healthy && e.healthy;
    d.topology = gpu.topology;
    const MigProfile* p = model ? FindMigProfile(*model, e.profile) : nullptr;
    d.memory_bytes = e.memory_bytes > 0 ? e.memory_bytes
                     : p ? parent_memory / mig_data::kMemorySlots * p->memory_slices
                         : 0;
    d.mig = MigSlot{e.profile, gpu.minor, gpu.id, e.start, parent_memory};
    out->push_back(std::move(d));
  }
}

}  // namespace

const std::vector<std::string>& PodFields() {
  static const auto* fields = new std::vector<std::string>{
      "name", "requests", "containers", "init_containers", "overhead", "node_selector",
      "tolerations", "gpu_models", "scope", "priority"};
  return *fields;
}

absl::StatusOr<Node> NodeFromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("node: expected an object");
  Node n;
  ASSIGN_OR_RETURN(n.name, Typed<std::string>(j, "name", "", "node"));
  if (n.name.empty()) return absl::InvalidArgumentError("node: name is missing");
  const std::string owner = "node " + n.name;
  RETURN_IF_ERROR(CheckKnownKeys(j, owner,
                                 {"name", "cpu", "memory", "pods", "labels", "taints", "gpu_sharing",
                                  "nvlink_groups", "devices", "gpus", "mig_strategy"}));
  ASSIGN_OR_RETURN(n.cpu_milli, QuantityField(j, "cpu", "cpu", 0, owner));
  ASSIGN_OR_RETURN(n.memory_bytes, QuantityField(j, "memory", "memory", 0, owner));
  ASSIGN_OR_RETURN(n.max_pods, QuantityField(j, "pods", "pods", 110, owner));
  if (n.cpu_milli > kMaxNodeCpuMilli)
    return FieldError(owner, "cpu",
                      absl::StrFormat("%s is more than the %s cores a node may have",
                                      FormatMilli(n.cpu_milli), FormatMilli(kMaxNodeCpuMilli)));
  if (n.memory_bytes > kMaxNodeMemoryBytes)
    return FieldError(owner, "memory",
                      absl::StrFormat("%s is more than the %s a node may have",
                                      FormatBytes(n.memory_bytes), FormatBytes(kMaxNodeMemoryBytes)));
  if (n.max_pods > kMaxNodePods)
    return FieldError(owner, "pods",
                      absl::StrFormat("%d is more than the %d a node may run", n.max_pods,
                                      kMaxNodePods));
  ASSIGN_OR_RETURN(n.labels, StringMap(j, "labels", owner));
  std::string sharing;
  ASSIGN_OR_RETURN(sharing, Typed<std::string>(j, "gpu_sharing", "mixed", owner));
  {
    absl::Status s = ParseGpuSharing(sharing, &n.gpu_sharing);
    if (!s.ok()) return FieldError(owner, "gpu_sharing", std::string(s.message()));
  }
  {
    std::string strategy;
    ASSIGN_OR_RETURN(strategy, Typed<std::string>(j, "mig_strategy", "mixed", owner));
    absl::Status s = ParseMigStrategy(strategy, &n.mig_strategy);
    if (!s.ok()) return FieldError(owner, "mig_strategy", std::string(s.message()));
    // Single-strategy instances are the node's GPUs and are only ever handed out whole.
    if (n.mig_strategy == MigStrategy::kSingle && !j.contains("gpu_sharing"))
      n.gpu_sharing = GpuSharing::kWholeOnly;
  }
  if (auto t = j.find("taints"); t != j.end() && !t->is_null()) {
    if (!t->is_array()) return FieldError(owner, "taints", "expected a list");
    if (t->size() > static_cast<size_t>(kMaxNodeListEntries))
      return TooMany(owner, "taints", t->size(), kMaxNodeListEntries);
    for (size_t i = 0; i < t->size(); ++i) {
      std::string where = absl::StrFormat("%s taints[%d]", owner, i);
      if (!(*t)[i].is_object()) return FieldError(where, "taint", "expected an object");
      RETURN_IF_ERROR(CheckKnownKeys((*t)[i], where, {"key", "value", "effect"}));
      Taint taint;
      ASSIGN_OR_RETURN(taint.key, Typed<std::string>((*t)[i], "key", "", where));
      ASSIGN_OR_RETURN(taint.value, Typed<std::string>((*t)[i], "value", "", where));
      ASSIGN_OR_RETURN(taint.effect, Typed<std::string>((*t)[i], "effect", "NoSchedule", where));
      n.taints.push_back(taint);
    }
  }
  if (auto g = j.find("nvlink_groups"); g != j.end() && !g->is_null()) {
    auto bad_groups = [&] {
      return FieldError(owner, "nvlink_groups", "expected a list of lists of GPU minors");
    };
    if (!g->is_array()) return bad_groups();
    if (g->size() > static_cast<size_t>(kMaxNodeListEntries))
      return TooMany(owner, "nvlink_groups", g->size(), kMaxNodeListEntries);
    for (const Json& group : *g) {
      // JSON would convert silently (1.5 -> 1, 4294967296 -> 0); only exact small ints pass.
      if (!group.is_array() || group.size() > static_cast<size_t>(kMaxDevicesPerNode))
        return bad_groups();
      std::vector<int> minors;
      for (const Json& m : group) {
        if (!m.is_number_integer() || m.get<int64_t>() < 0 ||
            m.get<int64_t>() > std::numeric_limits<int>::max())
          return bad_groups();
        minors.push_back(static_cast<int>(m.get<int64_t>()));
      }
      n.nvlink_groups.push_back(std::move(minors));
    }
  }
  if (auto d = j.find("devices"); d != j.end() && !d->is_null()) {
    if (!d->is_array()) return FieldError(owner, "devices", "expected a list");
    if (d->size() > static_cast<size_t>(kMaxDevicesPerNode))
      return FieldError(owner, "devices",
                        absl::StrFormat("%d devices is more than the %d a node may have", d->size(),
                                        kMaxDevicesPerNode));
    for (size_t i = 0; i < d->size(); ++i) {
      const std::string where = absl::StrFormat("%s devices[%d]", owner, i);
      ASSIGN_OR_RETURN(Device dev, DeviceFromJson((*d)[i], where));
      auto mig = (*d)[i].find("mig");
      if (mig == (*d)[i].end() || mig->is_null()) {
        n.devices.push_back(dev);
        continue;
      }
      if (dev.type != kGpu) return FieldError(where, "mig", "only a gpu can be in MIG mode");
      if (!dev.vf_groups.empty())
        return FieldError(where, "vfGroups", "only rdma devices have virtual functions");
      if (dev.minor > kMaxMigParentMinor)
        return FieldError(where, "minor",
                          absl::StrFormat("a GPU in MIG mode has a minor of at most %d",
                                          kMaxMigParentMinor));
      ASSIGN_OR_RETURN(std::vector<MigEntry> entries, MigEntries(*mig, where));
      AppendMigInstances(dev, entries, n.mig_strategy, &n.devices);
    }
  }
  if (auto g = j.find("gpus"); g != j.end() && !g->is_null()) {
    if (!g->is_object()) return FieldError(owner, "gpus", "expected {count, model, memory}");
    const std::string where = owner + " gpus";
    RETURN_IF_ERROR(CheckKnownKeys(*g, where, {"count", "model", "memory", "mig"}));
    int count;
    ASSIGN_OR_RETURN(count, Typed<int>(*g, "count", 0, where));
    if (count < 0) return FieldError(where, "count", "must not be negative");
    // Checked before any device is built: a typo of ten million GPUs costs nothing.
    if (count + n.devices.size() > static_cast<size_t>(kMaxDevicesPerNode))
      return FieldError(where, "count",
                        absl::StrFormat("%d GPUs (with %d other devices) is more than the %d "
                                        "devices a node may have",
                                        count, n.devices.size(), kMaxDevicesPerNode));
    std::string model;
    ASSIGN_OR_RETURN(model, Typed<std::string>(*g, "model", "", where));
    int64_t memory;
    ASSIGN_OR_RETURN(memory, QuantityField(*g, "memory", kKoordGpuMemory, 0, where));
    std::vector<MigEntry> layout;  // the same MIG instances on every GPU
    bool split = false;
    if (auto m = g->find("mig"); m != g->end() && !m->is_null()) {
      ASSIGN_OR_RETURN(layout, MigEntries(*m, where));
      split = true;
    }
    int next_minor = 0;
    for (const Device& dev : n.devices) {
      if (dev.type == kGpu && !dev.mig.active()) next_minor = std::max(next_minor, dev.minor + 1);
      if (dev.mig.active()) next_minor = std::max(next_minor, dev.mig.parent_minor + 1);
    }
    if (split && next_minor + count - 1 > kMaxMigParentMinor)
      return FieldError(where, "count", absl::StrFormat("GPUs in MIG mode have minors of at most %d",
                                                        kMaxMigParentMinor));
    for (int k = 0; k < count; ++k) {
      Device dev;
      dev.minor = next_minor + k;
      dev.model = model;
      dev.memory_bytes = memory;
      if (split) AppendMigInstances(dev, layout, n.mig_strategy, &n.devices);
      else n.devices.push_back(dev);
    }
  }
  RETURN_IF_ERROR(ValidateNode(n));
  return n;
}

Json NodeToJson(const Node& n) {
  Json j;
  j["name"] = n.name;
  j["cpu"] = FormatMilli(n.cpu_milli);
  j["memory"] = FormatBytes(n.memory_bytes);
  j["pods"] = n.max_pods;
  j["labels"] = n.labels;
  j["gpu_sharing"] = GpuSharingName(n.gpu_sharing);
  Json taints = Json::array();
  for (const Taint& t : n.taints) taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
  j["taints"] = taints;
  j["nvlink_groups"] = n.nvlink_groups;
  Json devices = Json::array();
  // A GPU in MIG mode is written once, where its first instance is, with its instances.
  std::map<int, size_t> mig_parent_entry;  // parent minor -> index in `devices`
  bool any_mig = false;
  for (const Device& d : n.devices) {
    if (d.mig.active()) {
      any_mig = true;
      Json instance = {{"profile", d.mig.profile}, {"start", d.mig.start}, {"id", d.id},
                       {"health", d.healthy}, {"memory", FormatBytes(d.memory_bytes)}};
      auto [it, fresh] = mig_parent_entry.emplace(d.mig.parent_minor, devices.size());
      if (fresh) {
        Json topo = {{"socketID", d.topology.socket},
                     {"nodeID", d.topology.numa_node},
                     {"pcieID", d.topology.pcie_switch},
                     {"busID", d.topology.bus_id}};
        devices.push_back({{"type", kGpu}, {"minor", d.mig.parent_minor}, {"id", d.mig.parent_id},
                           {"model", d.model}, {"memory", FormatBytes(d.mig.parent_memory_bytes)},
                           {"topology", topo}, {"mig", Json::array()}});
      }
      devices[it->second]["mig"].push_back(instance);
      continue;
    }
    Json resources;
    if (d.type == kGpu) {
      resources[kKoordGpuCore] = std::to_string(d.core);
      resources[kKoordGpuMemory] = FormatBytes(d.memory_bytes);
      resources[kKoordGpuMemoryRatio] = "100";
    } else {
      resources[absl::StrCat("koordinator.sh/", d.type)] = std::to_string(d.core);
      if (d.memory_bytes) resources[kKoordGpuMemory] = FormatBytes(d.memory_bytes);
    }
    Json topo = {{"socketID", d.topology.socket},
                 {"nodeID", d.topology.numa_node},
                 {"pcieID", d.topology.pcie_switch},
                 {"busID", d.topology.bus_id}};
    devices.push_back({{"type", d.type}, {"minor", d.minor}, {"id", d.id}, {"model", d.model},
                       {"health", d.healthy}, {"resources", resources}, {"topology", topo}});
    if (!d.vf_groups.empty()) devices.back()["vfGroups"] = VfGroupsToJson(d.vf_groups);
  }
  j["devices"] = devices;
  if (any_mig) j["mig_strategy"] = MigStrategyName(n.mig_strategy);
  return j;
}

namespace {

// A quantity map ({resource: quantity}) as text, for the requests, limits and overhead fields.
absl::StatusOr<std::map<std::string, std::string>> QuantityMap(const Json& j, const std::string& key,
                                                               const std::string& owner) {
  std::map<std::string, std::string> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_object()) return FieldError(owner, key, "expected an object");
  if (it->size() > static_cast<size_t>(kMaxNodeListEntries))
    return TooMany(owner, key, it->size(), kMaxNodeListEntries);
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    ASSIGN_OR_RETURN(out[kv.key()], QuantityText(*kv, owner, key + "." + kv.key()));
  }
  return out;
}

absl::StatusOr<std::vector<ContainerResources>> ContainersFromJson(const Json& j, const char* key,
                                                                    const std::string& owner) {
  std::vector<ContainerResources> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return FieldError(owner, key, "expected a list");
  if (it->size() > static_cast<size_t>(kMaxNodeListEntries))
    return TooMany(owner, key, it->size(), kMaxNodeListEntries);
  const bool init = std::string(key) == "init_containers";
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& c = (*it)[i];
    const std::string field = absl::StrFormat("%s[%d]", key, i);
    if (!c.is_object()) return FieldError(owner, field, "expected an object");
    const std::string at = absl::StrCat(owner, " ", field);
    std::vector<std::string> known = {"name", "requests", "limits"};
    if (init) known.push_back("restart_policy");
    RETURN_IF_ERROR(CheckKnownKeys(c, at, known));
    ASSIGN_OR_RETURN(std::string name, Typed<std::string>(c, "name", "", at));
    ContainerResources r;
    ASSIGN_OR_RETURN(r.requests, QuantityMap(c, "requests", at));
    ASSIGN_OR_RETURN(r.limits, QuantityMap(c, "limits", at));
    ASSIGN_OR_RETURN(std::string policy, Typed<std::string>(c, "restart_policy", "", at));
    if (!policy.empty() && policy != "Always")
      return FieldError(at, "restart_policy",
                        "\"" + policy + "\": an init container's restart policy may only be Always");
    r.sidecar = policy == "Always";
    out.push_back(std::move(r));
  }
  return out;
}

bool ListsContainers(const Json& j) {
  return j.contains("containers") || j.contains("init_containers") || j.contains("overhead");
}

}  // namespace

absl::StatusOr<ResourceQuantities> PodRequestsFromJson(const Json& j, const std::string& owner) {
  if (!ListsContainers(j)) {
    ASSIGN_OR_RETURN(auto texts, QuantityMap(j, "requests", owner));
    ResourceQuantities out;
    for (const auto& [name, text] : texts) {
      absl::StatusOr<Quantity> q = ReadQuantity(text);
      if (!q.ok())
        return absl::InvalidArgumentError(
            absl::StrCat(owner, ": request ", name, ": ", q.status().message()));
      out.emplace(name, *std::move(q));
    }
    return out;
  }
  if (auto r = j.find("requests"); r != j.end() && !r->is_null())
    return FieldError(owner, "requests",
                      "give either requests or containers (with init_containers and overhead), "
                      "not both");
  PodResources pod;
  ASSIGN_OR_RETURN(pod.containers, ContainersFromJson(j, "containers", owner));
  ASSIGN_OR_RETURN(pod.init_containers, ContainersFromJson(j, "init_containers", owner));
  ASSIGN_OR_RETURN(pod.overhead, QuantityMap(j, "overhead", owner));
  absl::StatusOr<ResourceQuantities> r = EffectiveRequests(pod);
  if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat(owner, ": ", r.status().message()));
  return r;
}

absl::StatusOr<Pod> PodFromJson(const Json& j, const RequestParseOptions& options) {
  if (!j.is_object()) return absl::InvalidArgumentError("pod: expected an object");
  Pod p;
  ASSIGN_OR_RETURN(p.name, Typed<std::string>(j, "name", "", "pod"));
  if (p.name.empty()) return absl::InvalidArgumentError("pod: name is missing");
  const std::string owner = "pod " + p.name;
  RETURN_IF_ERROR(CheckKnownKeys(j, owner, PodFields()));
  absl::Status parsed;
  if (ListsContainers(j)) {
    ASSIGN_OR_RETURN(ResourceQuantities effective, PodRequestsFromJson(j, owner));
    parsed = ParseRequests(effective, &p, options);
  } else {
    ASSIGN_OR_RETURN(auto requests, QuantityMap(j, "requests", owner));
    parsed = ParseRequests(requests, &p, options);
  }
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat(owner, ": ", parsed.message()));
  ASSIGN_OR_RETURN(p.node_selector, StringMap(j, "node_selector", owner));
  ASSIGN_OR_RETURN(p.priority, Typed<int>(j, "priority", 0, owner));
  ASSIGN_OR_RETURN(p.gpu_models, Typed<std::vector<std::string>>(j, "gpu_models", {}, owner));
  if (p.gpu_models.size() > static_cast<size_t>(kMaxNodeListEntries))
    return TooMany(owner, "gpu_models", p.gpu_models.size(), kMaxNodeListEntries);
  std::string scope;
  ASSIGN_OR_RETURN(scope, Typed<std::string>(j, "scope", "none", owner));
  if (scope == "none" || scope.empty()) p.scope = TopologyScope::kNone;
  else if (scope == "pcie") p.scope = TopologyScope::kPcie;
  else if (scope == "numa") p.scope = TopologyScope::kNuma;
  else return FieldError(owner, "scope", "\"" + scope + "\" is not one of none, pcie, numa");
  if (auto t = j.find("tolerations"); t != j.end() && !t->is_null()) {
    if (!t->is_array()) return FieldError(owner, "tolerations", "expected a list");
    if (t->size() > static_cast<size_t>(kMaxNodeListEntries))
      return TooMany(owner, "tolerations", t->size(), kMaxNodeListEntries);
    for (size_t i = 0; i < t->size(); ++i) {
      std::string where = absl::StrFormat("%s tolerations[%d]", owner, i);
      if (!(*t)[i].is_object()) return FieldError(where, "toleration", "expected an object");
      RETURN_IF_ERROR(CheckKnownKeys((*t)[i], where, {"key", "operator", "value", "effect"}));
      Toleration tol;
      ASSIGN_OR_RETURN(tol.key, Typed<std::string>((*t)[i], "key", "", where));
      ASSIGN_OR_RETURN(tol.op, Typed<std::string>((*t)[i], "operator", "Equal", where));
      ASSIGN_OR_RETURN(tol.value, Typed<std::string>((*t)[i], "value", "", where));
      ASSIGN_OR_RETURN(tol.effect, Typed<std::string>((*t)[i], "effect", "", where));
      if (tol.op != "Equal" && tol.op != "Exists")
        return FieldError(where, "operator", "must be Equal or Exists");
      if (!tol.effect.empty() && !IsTaintEffect(tol.effect))
        return FieldError(where, "effect",
                          "\"" + tol.effect + "\" is not one of NoSchedule, PreferNoSchedule, NoExecute");
      p.tolerations.push_back(tol);
    }
  }
  return p;
}

}  // namespace gpufleet
