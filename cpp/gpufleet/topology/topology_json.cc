#include "gpufleet/topology/topology_json.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet::topology {
namespace {

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

absl::StatusOr<std::string> String(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Bad(where, absl::StrCat(key, " must be a string"));
  return it->get<std::string>();
}

absl::StatusOr<int> Int(const Json& j, const char* key, int fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) {
    // Annotation values are strings.
    int v = 0;
    if (!absl::SimpleAtoi(it->get<std::string>(), &v))
      return Bad(where, absl::StrCat(key, " must be an integer"));
    return v;
  }
  if (!it->is_number_integer()) return Bad(where, absl::StrCat(key, " must be an integer"));
  return it->get<int>();
}

// Kueue's and KAI's annotations, as they spell them.
constexpr char kKueueRequired[] = "kueue.x-k8s.io/podset-required-topology";
constexpr char kKueuePreferred[] = "kueue.x-k8s.io/podset-preferred-topology";
constexpr char kKueueUnconstrained[] = "kueue.x-k8s.io/podset-unconstrained-topology";
constexpr char kKueueSliceLevel[] = "kueue.x-k8s.io/podset-slice-required-topology";
constexpr char kKueueSliceSize[] = "kueue.x-k8s.io/podset-slice-size";
constexpr char kKaiRequired[] = "kai.scheduler/topology-required-placement";
constexpr char kKaiPreferred[] = "kai.scheduler/topology-preferred-placement";

absl::Status ReadConstraint(const Json& j, const std::string& where, bool group, Constraint* c) {
  if (auto a = j.find("annotations"); a != j.end() && !a->is_null()) {
    if (!a->is_object()) return Bad(where, "annotations must be an object");
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (!it->is_string()) return Bad(where, absl::StrCat("annotation ", it.key(), " must be a string"));
      const std::string v = it->get<std::string>();
      const std::string& k = it.key();
      if (k == kKueueRequired || k == kKaiRequired) c->required = v;
      else if (k == kKueuePreferred || k == kKaiPreferred) c->preferred = v;
      else if (k == kKueueSliceLevel) c->slice_level = v;
      else if (k == kKueueSliceSize) {
        ASSIGN_OR_RETURN(c->slice_size, Int(*a, kKueueSliceSize, 0, where));
      }
      // kueue's unconstrained annotation asks for nothing beyond the topology itself; other
      // annotations belong to other readers.
      (void)kKueueUnconstrained;
    }
  }
  // Volcano's networkTopology: hard keeps the gang inside one HyperNode of tier <=
  // highestTierAllowed (searching from tier 1 up), soft only prefers tier 1.
  if (auto nt = j.find("networkTopology"); nt != j.end() && !nt->is_null()) {
    if (!nt->is_object()) return Bad(where, "networkTopology must be an object");
    RETURN_IF_ERROR(CheckKnownKeys(*nt, where + " networkTopology", {"mode", "highestTierAllowed"}));
    ASSIGN_OR_RETURN(std::string mode, String(*nt, "mode", where));
    ASSIGN_OR_RETURN(int tier, Int(*nt, "highestTierAllowed", 1, where));
    c->preferred = "tier-1";
    if (mode == "hard" || mode.empty()) {
      if (tier < 1) return Bad(where, absl::StrCat("networkTopology highestTierAllowed ", tier));
      c->required = absl::StrCat("tier-", tier);
    } else if (mode != "soft") {
      return Bad(where, absl::StrCat("networkTopology mode ", mode, " (hard or soft)"));
    }
  }
  ASSIGN_OR_RETURN(std::string required, String(j, "required", where));
  ASSIGN_OR_RETURN(std::string preferred, String(j, "preferred", where));
  if (!required.empty()) c->required = required;
  if (!preferred.empty()) c->preferred = preferred;
  if (group) {
    ASSIGN_OR_RETURN(std::string slice, String(j, "slice_level", where));
    if (!slice.empty()) c->slice_level = slice;
    ASSIGN_OR_RETURN(int size, Int(j, "slice_size", c->slice_size, where));
    c->slice_size = size;
    if (auto b = j.find("balanced"); b != j.end() && !b->is_null()) {
      if (!b->is_boolean()) return Bad(where, "balanced must be true or false");
      c->balanced = b->get<bool>();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Level>> LevelsFromJson(const Json& j) {
  const Json* list = &j;
  if (j.is_object()) {
    auto spec = j.find("spec");
    if (spec == j.end() || !spec->is_object() || !spec->contains("levels"))
      return absl::InvalidArgumentError("topology: expected a list of levels or a Topology with spec.levels");
    list = &(*spec)["levels"];
  }
  if (!list->is_array()) return absl::InvalidArgumentError("topology: levels must be a list");
  std::vector<Level> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& e = (*list)[i];
    const std::string where = absl::StrCat("topology level ", i);
    if (!e.is_object()) return Bad(where, "expected an object");
    RETURN_IF_ERROR(CheckKnownKeys(e, where, {"name", "label", "nodeLabel"}));
    ASSIGN_OR_RETURN(std::string label, String(e, "label", where));
    ASSIGN_OR_RETURN(std::string node_label, String(e, "nodeLabel", where));
    ASSIGN_OR_RETURN(std::string name, String(e, "name", where));
    if (label.empty()) label = node_label;
    if (label.empty()) return Bad(where, "needs a label (or nodeLabel)");
    out.push_back(Level{name.empty() ? label : name, label});
  }
  return out;
}

absl::StatusOr<std::vector<HyperNode>> HyperNodesFromJson(const Json& j) {
  const Json* list = &j;
  if (j.is_object() && j.contains("items")) list = &j["items"];
  if (!list->is_array()) return absl::InvalidArgumentError("HyperNodes: expected a list of HyperNode objects");
  std::vector<HyperNode> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& o = (*list)[i];
    std::string where = absl::StrCat("HyperNode ", i);
    if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object())
      return Bad(where, "expected an object with metadata.name");
    HyperNode hn;
    ASSIGN_OR_RETURN(hn.name, String(o["metadata"], "name", where));
    if (!hn.name.empty()) where = absl::StrCat("HyperNode ", hn.name);
    if (!o.contains("spec") || !o["spec"].is_object()) return Bad(where, "expected a spec");
    const Json& spec = o["spec"];
    ASSIGN_OR_RETURN(hn.tier, Int(spec, "tier", 0, where));
    auto members = spec.find("members");
    if (members != spec.end() && !members->is_null()) {
      if (!members->is_array()) return Bad(where, "spec.members must be a list");
      for (const Json& m : *members) {
        if (!m.is_object()) return Bad(where, "a member must be an object");
        RETURN_IF_ERROR(CheckKnownKeys(m, where + " member", {"type", "selector"}));
        HyperNodeMember member;
        ASSIGN_OR_RETURN(std::string type, String(m, "type", where));
        if (type == "HyperNode") member.kind = HyperNodeMember::Kind::kHyperNode;
        else if (type != "Node") return Bad(where, absl::StrCat("member type ", type, " (Node or HyperNode)"));
        auto sel = m.find("selector");
        if (sel == m.end() || !sel->is_object()) return Bad(where, "a member needs a selector");
        RETURN_IF_ERROR(CheckKnownKeys(*sel, where + " selector", {"exactMatch", "regexMatch", "labelMatch"}));
        if (auto e = sel->find("exactMatch"); e != sel->end() && e->is_object()) {
          ASSIGN_OR_RETURN(member.exact, String(*e, "name", where));
        }
        if (auto r = sel->find("regexMatch"); r != sel->end() && r->is_object()) {
          ASSIGN_OR_RETURN(member.regex, String(*r, "pattern", where));
        }
        if (auto l = sel->find("labelMatch"); l != sel->end() && l->is_object()) {
          auto ml = l->find("matchLabels");
          if (ml != l->end() && ml->is_object())
            for (auto it = ml->begin(); it != ml->end(); ++it) {
              if (!it->is_string()) return Bad(where, "matchLabels values must be strings");
              member.labels[it.key()] = it->get<std::string>();
            }
        }
        if (member.exact.empty() && member.regex.empty() && member.labels.empty())
          return Bad(where, "a member selector names nothing");
        hn.members.push_back(std::move(member));
      }
    }
    out.push_back(std::move(hn));
  }
  return out;
}

absl::StatusOr<Constraint> ConstraintFromJson(const Json& j, const std::string& where) {
  if (!j.is_object()) return Bad(where, "topology must be an object");
  RETURN_IF_ERROR(CheckKnownKeys(j, where + " topology",
                                 {"required", "preferred", "slice_level", "slice_size", "balanced",
                                  "annotations", "networkTopology"}));
  Constraint c;
  RETURN_IF_ERROR(ReadConstraint(j, where, true, &c));
  return c;
}

absl::StatusOr<GangRequest> GangRequestFromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("gang: expected an object");
  GangRequest g;
  ASSIGN_OR_RETURN(g.name, String(j, "name", "gang"));
  const std::string where = g.name.empty() ? "gang" : absl::StrCat("gang ", g.name);
  RETURN_IF_ERROR(CheckKnownKeys(
      j, where, {"name", "fit", "required", "preferred", "annotations", "networkTopology", "groups"}));
  ASSIGN_OR_RETURN(std::string fit, String(j, "fit", where));
  if (!fit.empty()) {
    ASSIGN_OR_RETURN(g.fit, ParseFit(fit));
  }
  RETURN_IF_ERROR(ReadConstraint(j, where, false, &g.constraint));
  auto groups = j.find("groups");
  if (groups == j.end() || !groups->is_array() || groups->empty())
    return Bad(where, "needs a non-empty list of groups");
  for (size_t i = 0; i < groups->size(); ++i) {
    const Json& e = (*groups)[i];
    if (!e.is_object()) return Bad(where, "a group must be an object");
    GroupRequest gr;
    ASSIGN_OR_RETURN(gr.name, String(e, "name", where));
    if (gr.name.empty()) gr.name = absl::StrCat("group-", i);
    const std::string gw = absl::StrCat(where, " group ", gr.name);
    RETURN_IF_ERROR(CheckKnownKeys(e, gw,
                                   {"name", "count", "requests", "node_selector", "tolerations",
                                    "gpu_models", "scope", "required", "preferred", "slice_level",
                                    "slice_size", "balanced", "annotations", "networkTopology"}));
    ASSIGN_OR_RETURN(gr.count, Int(e, "count", 1, gw));
    Json pod = Json::object();
    pod["name"] = gr.name;
    for (const char* k : {"requests", "node_selector", "tolerations", "gpu_models", "scope"})
      if (e.contains(k)) pod[k] = e[k];
    absl::StatusOr<Pod> p = PodFromJson(pod);
    if (!p.ok()) return Bad(gw, std::string(p.status().message()));
    gr.pod = *std::move(p);
    RETURN_IF_ERROR(ReadConstraint(e, gw, true, &gr.constraint));
    g.groups.push_back(std::move(gr));
  }
  return g;
}

}  // namespace gpufleet::topology
