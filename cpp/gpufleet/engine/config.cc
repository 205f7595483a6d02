#include "gpufleet/engine/config.h"

#include <cstring>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet::engine {
namespace {

absl::StatusOr<NamedArgs> ParseEntry(const Json& e, const std::string& where) {
  NamedArgs out;
  if (e.is_string()) {
    auto spec = ParseSpec(std::string(absl::StripAsciiWhitespace(e.get<std::string>())));
    if (!spec.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", spec.status().message()));
    out.name = spec->first;
    out.args = spec->second;
    return out;
  }
  if (!e.is_object())
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected a name or {\"name\", \"arguments\"}, got %s", where, e.dump()));
  RETURN_IF_ERROR(CheckKnownKeys(e, where, {"name", "arguments"}));
  auto name = e.find("name");
  if (name == e.end() || !name->is_string())
    return absl::InvalidArgumentError(absl::StrFormat("%s: \"name\" is missing", where));
  out.name = name->get<std::string>();
  if (auto a = e.find("arguments"); a != e.end() && !a->is_null()) {
    if (!a->is_object())
      return absl::InvalidArgumentError(
          absl::StrFormat("%s (%s): \"arguments\" must be an object", where, out.name));
    out.args = *a;
  }
  return out;
}

absl::Status Inconsistent(const std::string& why) {
  return absl::InvalidArgumentError("scheduler configuration: " + why);
}

}  // namespace

std::vector<std::vector<std::string>> Config::TierNames() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& tier : tiers) {
    out.emplace_back();
    for (const auto& p : tier) out.back().push_back(p.name);
  }
  return out;
}

Json Config::ToJson() const {
  Json j;
  j["actions"] = Json::array();
  for (const auto& a : actions) j["actions"].push_back({{"name", a.name}, {"arguments", a.args}});
  j["tiers"] = Json::array();
  for (const auto& tier : tiers) {
    Json plugins = Json::array();
    for (const auto& p : tier) plugins.push_back({{"name", p.name}, {"arguments", p.args}});
    j["tiers"].push_back({{"plugins", plugins}});
  }
  return j;
}

absl::StatusOr<Config> ConfigFromJson(const Json& j) {
  if (!j.is_object())
    return absl::InvalidArgumentError("scheduler configuration: expected an object with \"actions\" and \"tiers\"");
  RETURN_IF_ERROR(CheckKnownKeys(j, "scheduler configuration", {"actions", "tiers"}));
  Config c;
  // Actions.
  auto actions = j.find("actions");
  if (actions == j.end()) return Inconsistent("\"actions\" is missing");
  std::vector<Json> entries;
  if (actions->is_string()) {
    for (absl::string_view part : absl::StrSplit(actions->get<std::string>(), ',', absl::SkipWhitespace()))
      entries.push_back(std::string(absl::StripAsciiWhitespace(part)));
  } else if (actions->is_array()) {
    for (const Json& e : *actions) entries.push_back(e);
  } else {
    return Inconsistent("\"actions\" must be a list or a comma-separated string");
  }
  if (entries.empty()) return Inconsistent("\"actions\" is empty");
  std::set<std::string> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    ASSIGN_OR_RETURN(NamedArgs a, ParseEntry(entries[i], absl::StrFormat("actions[%d]", i)));
    auto built = MakeAction(a.name, a.args);
    if (!built.ok())
      return absl::Status(built.status().code(),
                          absl::StrFormat("actions[%d]: %s", i, built.status().message()));
    if (!seen.insert(a.name).second)
      return Inconsistent(absl::StrFormat("action \"%s\" is listed twice", a.name));
    c.actions.push_back(std::move(a));
  }
  const Registry<Action>& action_registry = Registry<Action>::Global();
  for (size_t i = 1; i < c.actions.size(); ++i)
    if (action_registry.HasCapability(c.actions[i].name, kAdmitsJobs))
      return Inconsistent(absl::StrFormat(
          "\"%s\" must be the first action (it admits the jobs the others place)",
          c.actions[i].name));
  // Tiers.
  auto tiers = j.find("tiers");
  if (tiers == j.end() || !tiers->is_array() || tiers->empty())
    return Inconsistent("\"tiers\" must be a non-empty list of {\"plugins\": [...]}");
  std::set<std::string> plugins;
  for (size_t t = 0; t < tiers->size(); ++t) {
    const Json& tier = (*tiers)[t];
    const std::string where = absl::StrFormat("tiers[%d]", t);
    RETURN_IF_ERROR(CheckKnownKeys(tier, where, {"plugins"}));
    if (!tier.is_object() || !tier.contains("plugins") || !tier["plugins"].is_array())
      return absl::InvalidArgumentError(where + ": expected {\"plugins\": [...]}");
    c.tiers.emplace_back();
    for (size_t k = 0; k < tier["plugins"].size(); ++k) {
      const std::string pw = absl::StrFormat("%s.plugins[%d]", where, k);
      ASSIGN_OR_RETURN(NamedArgs p, ParseEntry(tier["plugins"][k], pw));
      auto built = MakePlugin(p.name, p.args);
      if (!built.ok())
        return absl::Status(built.status().code(),
                            absl::StrFormat("%s: %s", pw, built.status().message()));
      if (!plugins.insert(p.name).second)
        return Inconsistent(absl::StrFormat("plugin \"%s\" appears twice in the tiers", p.name));
      c.tiers.back().push_back(std::move(p));
    }
    if (c.tiers.back().empty()) return Inconsistent(where + " has no plugins");
  }
  // Settings that cannot work together, from what actions and plugins declare: an action that
  // places tasks needs a plugin that checks predicates, and a "needs:X" capability needs a
  // plugin that answers X.
  const Registry<Plugin>& plugin_registry = Registry<Plugin>::Global();
  auto answered = [&](const std::string& capability) {
    for (const std::string& p : plugins)
      if (plugin_registry.HasCapability(p, capability)) return true;
    return false;
  };
  auto missing = [&](const std::string& who, const std::string& capability) {
    std::vector<std::string> providers;
    for (const Registration& r : plugin_registry.Infos())
      if (r.Has(capability)) providers.push_back(r.name);
    return Inconsistent(absl::StrFormat(
        "\"%s\" needs a plugin that answers \"%s\" (registered: %s)", who, capability,
        providers.empty() ? "none" : absl::StrJoin(providers, ", ")));
  };
  auto needs = [](const Registration& r) {
    std::vector<std::string> out;
    for (const std::string& cap : r.capabilities)
      if (absl::StartsWith(cap, kNeedsPrefix)) out.push_back(cap.substr(strlen(kNeedsPrefix)));
    return out;
  };
  for (const auto& a : c.actions) {
    ASSIGN_OR_RETURN(Registration info, action_registry.Info(a.name));
    if (info.Has(kPlacesTasks) && !answered(kPredicates)) return missing(a.name, kPredicates);
    for (const std::string& need : needs(info))
      if (!answered(need)) return missing(a.name, need);
  }
  for (const std::string& p : plugins) {
    ASSIGN_OR_RETURN(Registration info, plugin_registry.Info(p));
    for (const std::string& need : needs(info))
      if (!answered(need)) return missing(p, need);
  }
  return c;
}

Json DefaultConfigJson() {
  return Json::parse(R"({
    "actions": "enqueue, allocate, backfill",
    "tiers": [
      {"plugins": [{"name": "priority"}, {"name": "gang"}]},
      {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                   {"name": "nodeorder"}, {"name": "deviceshare"}]}
    ]})");
}

}  // namespace gpufleet::engine
