#include "gpufleet/core/mig.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/quantity.h"

namespace gpufleet {

std::string MigDeviceType(std::string_view profile) {
  return absl::StrCat(kMigTypePrefix, absl::string_view(profile.data(), profile.size()));
}

const MigModel* FindMigModel(std::string_view model) {
  if (model.empty()) return nullptr;
  for (const MigModel& m : mig_data::kModels) {
    if (m.name == model) return &m;
    for (std::string_view alias : m.aliases)
      if (!alias.empty() && alias == model) return &m;
  }
  return nullptr;
}

const MigProfile* FindMigProfile(const MigModel& model, std::string_view profile) {
  for (const MigProfile& p : model.profiles)
    if (p.name == profile) return &p;
  return nullptr;
}

bool IsKnownMigProfile(std::string_view profile) {
  for (const MigModel& m : mig_data::kModels)
    if (FindMigProfile(m, profile) != nullptr) return true;
  return false;
}

std::string MigModelNames() {
  std::vector<std::string> names;
  for (const MigModel& m : mig_data::kModels) names.emplace_back(m.name);
  return absl::StrJoin(names, ", ");
}

std::string MigProfileNames(const MigModel& model) {
  std::vector<std::string> names;
  for (const MigProfile& p : model.profiles) names.emplace_back(p.name);
  return absl::StrJoin(names, ", ");
}

namespace {

std::string Slots(uint8_t mask) {
  std::vector<int> slots;
  for (int k = 0; k < mig_data::kMemorySlots; ++k)
    if (mask & (1u << k)) slots.push_back(k);
  return absl::StrJoin(slots, ", ");
}

// Checks one GPU's instances (indices into node.devices, in declaration order).
absl::Status ValidateGpu(const Node& node, int parent, const std::vector<int>& members) {
  const Device& first = node.devices[members.front()];
  const std::string gpu = absl::StrFormat("node %s: gpu %d (%s)", node.name, parent, first.model);
  const MigModel* model = FindMigModel(first.model);
  if (model == nullptr)
    return absl::InvalidArgumentError(absl::StrFormat(
        "node %s: gpu %d: model \"%s\" has no MIG geometry (known: %s)", node.name, parent,
        first.model, MigModelNames()));
  uint8_t used = 0;
  int compute = 0;
  std::map<std::string_view, int> count;
  for (size_t i = 0; i < members.size(); ++i) {
    const Device& d = node.devices[members[i]];
    const std::string where = absl::StrFormat("%s mig[%d] %s at slot %d", gpu, i, d.mig.profile,
                                              d.mig.start);
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
    };
    if (d.model != first.model || d.mig.parent_id != first.mig.parent_id ||
        d.mig.parent_memory_bytes != first.mig.parent_memory_bytes)
      return bad("instances of one GPU must agree on its model, uuid and memory");
    const MigProfile* p = FindMigProfile(*model, d.mig.profile);
    if (p == nullptr)
      return bad(absl::StrFormat("profile not offered by %s (offers: %s)", model->name,
                                 MigProfileNames(*model)));
    if (d.mig.start < 0 || d.mig.start >= mig_data::kMemorySlots ||
        !(p->start_slots & (1u << d.mig.start)))
      return bad(absl::StrFormat("%s may start at slots %s only", p->name, Slots(p->start_slots)));
    const uint8_t span = static_cast<uint8_t>(((1u << p->memory_slices) - 1) << d.mig.start);
    if (used & span) {
      for (size_t k = 0; k < i; ++k) {
        const Device& o = node.devices[members[k]];
        const MigProfile* op = FindMigProfile(*model, o.mig.profile);
        const uint8_t ospan = static_cast<uint8_t>(((1u << op->memory_slices) - 1) << o.mig.start);
        if (ospan & span)
          return bad(absl::StrFormat("overlaps mig[%d] %s at slot %d (memory slots %d-%d)", k,
                                     o.mig.profile, o.mig.start, o.mig.start,
                                     o.mig.start + op->memory_slices - 1));
      }
    }
    used |= span;
    compute += p->compute_slices;
    if (compute > mig_data::kComputeSlices)
      return bad(absl::StrFormat("the instances use %d compute slices; %s has %d", compute,
                                 model->name, mig_data::kComputeSlices));
    if (++count[p->name] > p->max_instances)
      return bad(absl::StrFormat("%s allows at most %d %s instance%s per GPU", model->name,
                                 p->max_instances, p->name, p->max_instances == 1 ? "" : "s"));
    const std::string type =
        node.mig_strategy == MigStrategy::kSingle ? std::string(kGpu) : MigDeviceType(p->name);
    if (d.type != type)
      return bad(absl::StrFormat("device type must be \"%s\" with the %s strategy, got \"%s\"",
                                 type, MigStrategyName(node.mig_strategy), d.type));
    if (d.minor != MigInstanceMinor(parent, d.mig.start))
      return bad(absl::StrFormat("device minor must be %d (8 x gpu minor + start slot), got %d",
                                 MigInstanceMinor(parent, d.mig.start), d.minor));
    if (d.memory_bytes <= 0 || d.memory_bytes > d.mig.parent_memory_bytes)
      return bad(absl::StrFormat("memory %s must be positive and at most the GPU's %s",
                                 FormatBytes(d.memory_bytes),
                                 FormatBytes(d.mig.parent_memory_bytes)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateMig(const Node& node) {
  std::map<int, std::vector<int>> by_parent;
  std::set<int> whole_gpus;
  std::set<std::string> profiles;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    if (d.mig.active()) {
      if (d.mig.parent_minor < 0)
        return absl::InvalidArgumentError(absl::StrFormat(
            "node %s: %s %d: MIG parent gpu minor %d is negative", node.name, d.type, d.minor,
            d.mig.parent_minor));
      by_parent[d.mig.parent_minor].push_back(static_cast<int>(i));
      profiles.insert(d.mig.profile);
    } else if (d.type == kGpu) {
      whole_gpus.insert(d.minor);
    }
  }
  if (by_parent.empty()) return absl::OkStatus();
  for (const auto& [parent, members] : by_parent) {
    if (node.mig_strategy == MigStrategy::kMixed && whole_gpus.count(parent))
      return absl::InvalidArgumentError(absl::StrFormat(
          "node %s: gpu %d is in MIG mode and cannot also be offered whole", node.name, parent));
    absl::Status s = ValidateGpu(node, parent, members);
    if (!s.ok()) return s;
  }
  if (node.mig_strategy == MigStrategy::kSingle) {
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("node %s: mig_strategy single: %s", node.name, why));
    };
    if (!whole_gpus.empty())
      return bad(absl::StrFormat("every GPU must be in MIG mode; gpu %d is not",
                                 *whole_gpus.begin()));
    if (profiles.size() > 1)
      return bad(absl::StrFormat("all instances must have one profile, got %s",
                                 absl::StrJoin(profiles, ", ")));
    if (node.gpu_sharing != GpuSharing::kWholeOnly)
      return bad("MIG instances are handed out whole only (gpu_sharing must be whole)");
    if (!node.nvlink_groups.empty()) return bad("MIG instances have no NVLink groups");
  }
  return absl::OkStatus();
}

}  // namespace gpufleet
