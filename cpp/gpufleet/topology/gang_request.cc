#include "gpufleet/topology/gang_request.h"

#include "absl/strings/str_cat.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::topology {
namespace {

struct FitEntry {
  Fit fit;
  const char* name;
};
constexpr FitEntry kFits[] = {
    {Fit::kBestFit, "best-fit"},
    {Fit::kLeastFreeCapacity, "least-free-capacity"},
    {Fit::kLargestFit, "largest-fit"},
    {Fit::kFragmentation, "fragmentation"},
};

absl::StatusOr<ResolvedConstraint> Resolve(const Topology& t, const Constraint& c, int count,
                                           const std::string& where) {
  ResolvedConstraint r;
  auto level = [&](const std::string& name, int* out) -> absl::Status {
    if (name.empty()) return absl::OkStatus();
    absl::StatusOr<int> l = t.LevelIndex(name);
    if (!l.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", l.status().message()));
    *out = *l;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(level(c.required, &r.required));
  RETURN_IF_ERROR(level(c.preferred, &r.preferred));
  RETURN_IF_ERROR(level(c.slice_level, &r.slice_level));
  if (r.required >= 0 && r.preferred >= 0 && r.preferred < r.required)
    return absl::InvalidArgumentError(absl::StrCat(where, ": preferred level ", c.preferred,
                                                   " is wider than required level ", c.required));
  if (r.slice_level >= 0) {
    if (r.required >= 0 && r.slice_level < r.required)
      return absl::InvalidArgumentError(absl::StrCat(where, ": slice level ", c.slice_level,
                                                     " is wider than required level ", c.required));
    if (c.slice_size < 1)
      return absl::InvalidArgumentError(absl::StrCat(where, ": slice size ", c.slice_size,
                                                     " (needs at least 1)"));
    if (count % c.slice_size != 0)
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", count,
                                                     " pods do not split into slices of ", c.slice_size));
    r.slice_size = c.slice_size;
  } else if (c.slice_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": slice size without a slice level"));
  }
  r.balanced = c.balanced;
  return r;
}

}  // namespace

const char* FitName(Fit fit) {
  for (const FitEntry& e : kFits)
    if (e.fit == fit) return e.name;
  return "?";
}

absl::StatusOr<Fit> ParseFit(const std::string& name) {
  for (const FitEntry& e : kFits)
    if (name == e.name) return e.fit;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown topology fit ", name, " (best-fit, least-free-capacity, largest-fit, fragmentation)"));
}

absl::StatusOr<Constraint> VolcanoConstraint(const Topology& topology, const std::string& mode,
                                             int highest_tier) {
  if (topology.num_levels() == 0) return absl::InvalidArgumentError("volcano: empty topology");
  Constraint c;
  c.preferred = topology.level(topology.num_levels() - 1).name;
  if (mode == "soft") return c;
  if (mode != "hard")
    return absl::InvalidArgumentError(absl::StrCat("volcano: network topology mode ", mode,
                                                   " (hard or soft)"));
  const std::string tier = absl::StrCat("tier-", highest_tier);
  if (topology.FindLevel(tier) < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("volcano: highestTierAllowed ", highest_tier, ": the topology has no such tier"));
  c.required = tier;
  return c;
}

absl::StatusOr<std::vector<ResolvedConstraint>> ResolveRequest(const Topology& topology,
                                                               const GangRequest& request,
                                                               ResolvedConstraint* gang) {
  const std::string name = request.name.empty() ? "gang" : absl::StrCat("gang ", request.name);
  if (request.groups.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no groups"));
  if (!request.constraint.slice_level.empty() || request.constraint.slice_size != 0)
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": slices belong to a group, not to the whole gang"));
  ASSIGN_OR_RETURN(*gang, Resolve(topology, request.constraint, 1, name));
  std::vector<ResolvedConstraint> out;
  for (const GroupRequest& g : request.groups) {
    const std::string where = absl::StrCat(name, " group ", g.name);
    if (g.count < 1) return absl::InvalidArgumentError(absl::StrCat(where, ": count ", g.count));
    ASSIGN_OR_RETURN(ResolvedConstraint r, Resolve(topology, g.constraint, g.count, where));
    out.push_back(r);
  }
  return out;
}

}  // namespace gpufleet::topology
