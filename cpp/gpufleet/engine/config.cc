#include "gpufleet/engine/config.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/json_text.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/plugin_switches.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet::engine {
namespace {

// A tier entry or an action: "name(k=v)", or {"name", "arguments"} plus, for plugins
// (`switches`), Volcano's per-plugin switches.
absl::StatusOr<NamedArgs> ParseEntry(const Json& e, const std::string& where, bool switches) {
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
  std::vector<std::string> known = {"name", "arguments"};
  if (switches)
    for (const std::string& k : PluginSwitchKeys()) known.push_back(k);
  RETURN_IF_ERROR(CheckKnownKeys(e, where, known));
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
  for (auto it = e.begin(); it != e.end(); ++it) {
    const PluginSwitch* sw = FindPluginSwitch(it.key());
    if (sw == nullptr || it->is_null()) continue;
    if (!it->is_boolean())
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s (%s): \"%s\" must be true or false, got %s", where, out.name, it.key(), it->dump()));
    if (it->get<bool>() && !sw->supported_on)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s (%s): \"%s: true\" is not supported (gpufleet has no hierarchical sharing)", where,
          out.name, it.key()));
    out.switches[it.key()] = it->get<bool>();
  }
  return out;
}

// Volcano ships its configuration inside a ConfigMap; returns the configuration it holds.
absl::StatusOr<Json> UnwrapConfigMap(const Json& j, std::string* where) {
  if (!j.is_object() || !j.contains("kind")) return j;
  const std::string owner = "scheduler configuration";
  if (j["kind"] != "ConfigMap")
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: a Kubernetes object of kind %s; expected a ConfigMap or {\"actions\", \"tiers\"}",
        owner, j["kind"].dump()));
  RETURN_IF_ERROR(CheckKnownKeys(
      j, "ConfigMap", {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"}));
  std::string name = "ConfigMap";
  if (auto m = j.find("metadata"); m != j.end() && m->is_object()) {
    std::string ns = m->contains("namespace") && (*m)["namespace"].is_string()
                         ? (*m)["namespace"].get<std::string>() + "/" : "";
    if (m->contains("name") && (*m)["name"].is_string())
      name = absl::StrCat("ConfigMap ", ns, (*m)["name"].get<std::string>());
  }
  auto data = j.find("data");
  if (data == j.end() || !data->is_object() || data->empty())
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"data\" must hold the scheduler configuration", name));
  constexpr char kKey[] = "volcano-scheduler.conf";
  std::string key;
  if (data->contains(kKey)) {
    key = kKey;
  } else {
    std::vector<std::string> keys, confs;
    for (auto it = data->begin(); it != data->end(); ++it) {
      keys.push_back(it.key());
      if (absl::EndsWith(it.key(), ".conf")) confs.push_back(it.key());
    }
    if (confs.size() != 1)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: no \"%s\" in data, and %s \"*.conf\" keys (data holds: %s)", name, kKey,
          confs.empty() ? "no" : "several", absl::StrJoin(keys, ", ")));
    key = confs[0];
  }
  *where = absl::StrFormat("%s, data \"%s\"", name, key);
  const Json& held = (*data)[key];
  if (held.is_object()) return held;
  if (!held.is_string())
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected the configuration text, got %s", *where, held.dump()));
  auto parsed = ParseJsonText(held.get<std::string>(), *where);
  if (!parsed.ok())
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: not JSON; YAML text is read by gpufleet.engine.load_config and `gpufleet cycle "
        "--conf`, which parse it before the check", *where));
  return *std::move(parsed);
}

// Volcano's "configurations": per-action arguments, merged into the listed actions' arguments.
absl::Status MergeActionConfigurations(const Json& list, std::vector<NamedArgs>& actions) {
  if (list.is_null()) return absl::OkStatus();
  if (!list.is_array())
    return absl::InvalidArgumentError(
        "scheduler configuration: \"configurations\" must be a list of {\"name\", \"arguments\"}");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = absl::StrFormat("configurations[%d]", i);
    ASSIGN_OR_RETURN(NamedArgs c, ParseEntry(list[i], where, /*switches=*/false));
    auto a = std::find_if(actions.begin(), actions.end(),
                          [&](const NamedArgs& x) { return x.name == c.name; });
    if (a == actions.end())
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: action \"%s\" is not in \"actions\"", where, c.name));
    for (auto it = c.args.begin(); it != c.args.end(); ++it) {
      if (a->args.contains(it.key()))
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: argument \"%s\" of action \"%s\" is given twice", where, it.key(), c.name));
      a->args[it.key()] = *it;
    }
  }
  return absl::OkStatus();
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

PointSet NamedArgs::DisabledPoints() const {
  PointSet out;
  for (const auto& [key, on] : switches) {
    const PluginSwitch* sw = FindPluginSwitch(key);
    if (!on && sw != nullptr && sw->point) out.set(static_cast<int>(*sw->point));
  }
  return out;
}

std::map<std::string, PointSet> Config::DisabledPoints() const {
  std::map<std::string, PointSet> out;
  for (const auto& tier : tiers)
    for (const NamedArgs& p : tier)
      if (PointSet off = p.DisabledPoints(); off.any()) out[p.name] = off;
  return out;
}

std::vector<Need> NeedsOf(const Config& c) {
  std::vector<Need> out;
  for (const NamedArgs& a : c.actions)
    if (auto info = Registry<Action>::Global().Info(a.name); info.ok())
      out.push_back({a.name, info->traits.Needs()});
  for (const auto& tier : c.tiers)
    for (const NamedArgs& p : tier)
      if (auto info = Registry<Plugin>::Global().Info(p.name); info.ok()) {
        Need need{p.name, {}};
        for (Point n : info->traits.needs) need.points.set(static_cast<int>(n));
        out.push_back(std::move(need));
      }
  return out;
}

absl::Status CheckNeedsAnswered(const std::vector<Need>& needs, const PointSet& answered) {
  for (const Need& need : needs)
    for (const CallbackPoint& p : CallbackPoints()) {
      const int bit = static_cast<int>(p.point);
      if (!need.points.test(bit) || answered.test(bit)) continue;
      std::vector<std::string> providers = PluginsAnswering(p.point);
      return Inconsistent(absl::StrFormat(
          "\"%s\" needs a plugin that answers \"%s\" (registered: %s)", need.who, p.name,
          providers.empty() ? "none" : absl::StrJoin(providers, ", ")));
    }
  return absl::OkStatus();
}

Json Config::ToJson() const {
  Json j;
  j["actions"] = Json::array();
  for (const auto& a : actions) j["actions"].push_back({{"name", a.name}, {"arguments", a.args}});
  j["tiers"] = Json::array();
  for (const auto& tier : tiers) {
    Json plugins = Json::array();
    for (const auto& p : tier) {
      Json e = {{"name", p.name}, {"arguments", p.args}};
      for (const auto& [key, on] : p.switches) e[key] = on;
      plugins.push_back(std::move(e));
    }
    j["tiers"].push_back({{"plugins", plugins}});
  }
  if (!metrics.is_null()) j["metrics"] = metrics;
  return j;
}

namespace {

absl::StatusOr<Config> ParseConfig(const Json& j) {
  if (!j.is_object())
    return absl::InvalidArgumentError("scheduler configuration: expected an object with \"actions\" and \"tiers\"");
  RETURN_IF_ERROR(CheckKnownKeys(j, "scheduler configuration",
                                 {"actions", "tiers", "configurations", "metrics"}));
  Config c;
  if (auto m = j.find("metrics"); m != j.end() && !m->is_null()) {
    if (!m->is_object())
      return Inconsistent("\"metrics\" must be a mapping");
    c.metrics = *m;
  }
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
    ASSIGN_OR_RETURN(NamedArgs a, ParseEntry(entries[i], absl::StrFormat("actions[%d]", i),
                                             /*switches=*/false));
    if (!seen.insert(a.name).second)
      return Inconsistent(absl::StrFormat("action \"%s\" is listed twice", a.name));
    c.actions.push_back(std::move(a));
  }
  if (auto conf = j.find("configurations"); conf != j.end())
    RETURN_IF_ERROR(MergeActionConfigurations(*conf, c.actions));
  for (size_t i = 0; i < c.actions.size(); ++i) {
    auto built = MakeAction(c.actions[i].name, c.actions[i].args);
    if (!built.ok())
      return absl::Status(built.status().code(),
                          absl::StrFormat("actions[%d]: %s", i, built.status().message()));
  }
  for (size_t i = 1; i < c.actions.size(); ++i)
    if (Registry<Action>::Global().Info(c.actions[i].name)->traits.admits_jobs)
      return Inconsistent(absl::StrFormat(
          "\"%s\" must be the first action (it admits the jobs the others place)",
          c.actions[i].name));
  // Tiers.
  auto tiers = j.find("tiers");
  if (tiers == j.end() || !tiers->is_array() || tiers->empty())
    return Inconsistent("\"tiers\" must be a non-empty list of {\"plugins\": [...]}");
  std::set<std::string> plugins;
  PointSet answered;  // what the plugins register, observed on an empty session
  for (size_t t = 0; t < tiers->size(); ++t) {
    const Json& tier = (*tiers)[t];
    const std::string where = absl::StrFormat("tiers[%d]", t);
    RETURN_IF_ERROR(CheckKnownKeys(tier, where, {"plugins"}));
    if (!tier.is_object() || !tier.contains("plugins") || !tier["plugins"].is_array())
      return absl::InvalidArgumentError(where + ": expected {\"plugins\": [...]}");
    c.tiers.emplace_back();
    for (size_t k = 0; k < tier["plugins"].size(); ++k) {
      const std::string pw = absl::StrFormat("%s.plugins[%d]", where, k);
      ASSIGN_OR_RETURN(NamedArgs p, ParseEntry(tier["plugins"][k], pw, /*switches=*/true));
      auto answers = ObserveAnswers(p.name, p.args, p.DisabledPoints());
      if (!answers.ok())
        return absl::Status(answers.status().code(),
                            absl::StrFormat("%s: %s", pw, answers.status().message()));
      answered |= *answers;
      if (!plugins.insert(p.name).second)
        return Inconsistent(absl::StrFormat("plugin \"%s\" appears twice in the tiers", p.name));
      c.tiers.back().push_back(std::move(p));
    }
    if (c.tiers.back().empty()) return Inconsistent(where + " has no plugins");
  }
  // Settings that cannot work together: what an action or plugin needs (its traits) must be
  // answered by a plugin in the tiers, with its switches.
  RETURN_IF_ERROR(CheckNeedsAnswered(NeedsOf(c), answered));
  return c;
}

}  // namespace

absl::StatusOr<Config> ConfigFromJson(const Json& j) {
  std::string where;
  ASSIGN_OR_RETURN(Json held, UnwrapConfigMap(j, &where));
  auto c = ParseConfig(held);
  if (!c.ok() && !where.empty())
    return absl::Status(c.status().code(), absl::StrCat(where, ": ", c.status().message()));
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
