#include "gpufleet/queues/queue_json.h"

#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/strict_json.h"

namespace gpufleet::queues {
namespace {

absl::Status JsonError(const std::string& where, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", where, why));
}

// The amount maps of gpufleet's format and the ResourceQuota field each sets.
struct AmountField {
  const char* key;
  double ResourceQuota::*field;
  bool unlimited_ok;
};
const AmountField kAmountFields[] = {
    {"quota", &ResourceQuota::quota, true},
    {"limit", &ResourceQuota::limit, true},
    {"guarantee", &ResourceQuota::guarantee, false},
    {"borrowing_limit", &ResourceQuota::borrowing_limit, true},
    {"lending_limit", &ResourceQuota::lending_limit, true},
    {"over_quota_weight", &ResourceQuota::over_quota_weight, false},
};

absl::StatusOr<CohortPreemption> ReadCohortPreemption(const Json& v, const std::string& where) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "Never") return CohortPreemption::kNever;
    if (s == "LowerPriority") return CohortPreemption::kLowerPriority;
    if (s == "Any") return CohortPreemption::kAny;
  }
  return JsonError(where, "expected \"Never\", \"LowerPriority\" or \"Any\", got " + v.dump());
}

const char* CohortPreemptionName(CohortPreemption p) {
  switch (p) {
    case CohortPreemption::kNever: return "Never";
    case CohortPreemption::kLowerPriority: return "LowerPriority";
    case CohortPreemption::kAny: return "Any";
  }
  return "Any";
}

absl::Status ReadBorrowWithinCohort(const Json& v, const std::string& where, QuotaSpec* q) {
  if (!v.is_object()) return JsonError(where, "expected {policy, max_priority_threshold}");
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    if (k == "policy") {
      if (*it == "LowerPriority") q->borrow_within_cohort = true;
      else if (*it == "Never") q->borrow_within_cohort = false;
      else
        return JsonError(where + ".policy",
                         "expected \"Never\" or \"LowerPriority\", got " + it->dump());
    } else if (k == "max_priority_threshold" || k == "maxPriorityThreshold") {
      if (!IsIntegerIn<int>(*it)) return JsonError(where + "." + k, "expected an integer");
      q->borrow_priority_threshold = it->get<int>();
    } else {
      return JsonError(where, absl::StrCat("unknown field \"", k, "\""));
    }
  }
  return absl::OkStatus();
}

double ReadLooseNumber(const Json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = v.get<std::string>();
      const double x = std::stod(s, &used);
      if (used == s.size()) return x;
    } catch (const std::exception&) {
    }
  }
  return std::nan("");
}

// Adds `v` (a Kubernetes quantity) to out[name] in gpufleet's text form: numbers stay numbers,
// quantities are parsed into engine units and written back as engine-unit numbers.
absl::Status AddAmount(Json& out, const std::string& k8s_name, const Json& v,
                       const std::string& where) {
  const std::string name = ResourceName(k8s_name);
  ASSIGN_OR_RETURN(double x, ReadAmount(name, v, true, where + "." + k8s_name));
  // Written back in the units ReadAmount reads: cpu as "<milli>m", memory in bytes.
  auto render = [&](double amount) -> Json {
    if (std::isinf(amount)) return "unlimited";
    if (name == "cpu") return absl::StrCat(static_cast<int64_t>(std::llround(amount)), "m");
    return amount;
  };
  if (!out.contains(name)) {
    out[name] = render(x);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(double before, ReadAmount(name, out[name], true, where));
  out[name] = render(before + x);
  return absl::OkStatus();
}

// Kueue's resourceGroups: nominalQuota, borrowingLimit and lendingLimit summed over flavors.
absl::Status KueueResourceGroups(const Json& spec, const std::string& where, Json* q) {
  auto groups = spec.find("resourceGroups");
  if (groups == spec.end() || groups->is_null()) return absl::OkStatus();
  if (!groups->is_array()) return JsonError(where, "resourceGroups: expected a list");
  Json quota = Json::object(), borrow = Json::object(), lend = Json::object();
  std::set<std::string> unlimited_borrow, unlimited_lend;
  for (const Json& g : *groups) {
    if (!g.is_object() || !g.contains("flavors") || !g["flavors"].is_array())
      return JsonError(where, "resourceGroups: each group needs a list of flavors");
    for (const Json& f : g["flavors"]) {
      if (!f.is_object() || !f.contains("resources") || !f["resources"].is_array())
        return JsonError(where, "resourceGroups: each flavor needs a list of resources");
      const std::string fw = absl::StrCat(where, " flavor ", f.value("name", "?"));
      for (const Json& r : f["resources"]) {
        if (!r.is_object() || !r.contains("name") || !r["name"].is_string())
          return JsonError(fw, "each resource needs a name");
        const std::string name = r["name"].get<std::string>();
        RETURN_IF_ERROR(AddAmount(quota, name, r.value("nominalQuota", Json(0)), fw));
        if (r.contains("borrowingLimit"))
          RETURN_IF_ERROR(AddAmount(borrow, name, r["borrowingLimit"], fw));
        else
          unlimited_borrow.insert(ResourceName(name));
        if (r.contains("lendingLimit"))
          RETURN_IF_ERROR(AddAmount(lend, name, r["lendingLimit"], fw));
        else
          unlimited_lend.insert(ResourceName(name));
      }
    }
  }
  for (const std::string& r : unlimited_borrow) borrow.erase(r);
  for (const std::string& r : unlimited_lend) lend.erase(r);
  (*q)["quota"] = quota;
  if (!borrow.empty()) (*q)["borrowing_limit"] = borrow;
  if (!lend.empty()) (*q)["lending_limit"] = lend;
  return absl::OkStatus();
}

absl::Status KueueFairSharing(const Json& spec, const std::string& where, Json* q) {
  auto fs = spec.find("fairSharing");
  if (fs == spec.end() || !fs->is_object() || !fs->contains("weight")) return absl::OkStatus();
  const double w = ReadLooseNumber((*fs)["weight"]);
  if (!(w >= 0) || std::isinf(w))
    return JsonError(where,
                     "fairSharing.weight: expected a number >= 0, got " + (*fs)["weight"].dump());
  (*q)["weight"] = w;
  return absl::OkStatus();
}

absl::StatusOr<Json> FromKai(const Json& o, const std::string& name, const std::string& where) {
  const Json spec = o.value("spec", Json::object());
  Json q = {{"name", name}};
  if (spec.contains("parentQueue") && !spec["parentQueue"].is_null())
    q["parent"] = spec["parentQueue"];
  if (spec.contains("priority")) q["priority"] = spec["priority"];
  Json quota = Json::object(), limit = Json::object(), oqw = Json::object();
  const Json res = spec.value("resources", Json::object());
  for (auto it = res.begin(); it != res.end(); ++it) {
    const std::string r = it.key();
    if (r != "cpu" && r != "memory" && r != "gpu")
      return JsonError(where,
                       absl::StrCat("resources: unknown resource \"", r, "\" (cpu, memory, gpu)"));
    // KAI units: cpu in millicores, memory in megabytes (10^6 bytes), gpu in GPUs; -1 unlimited.
    auto convert = [&](const char* field) -> absl::StatusOr<Json> {
      const double x = ReadLooseNumber((*it)[field]);
      if (std::isnan(x) || (x < 0 && x != -1))
        return JsonError(where,
                         absl::StrFormat("resources.%s.%s: expected a number >= 0 or -1, got %s", r,
                                         field, (*it)[field].dump()));
      if (x == -1) return Json("unlimited");
      if (r == "cpu") return Json(absl::StrCat(static_cast<int64_t>(std::llround(x)), "m"));
      if (r == "memory") return Json(x * 1e6);
      return Json(x);
    };
    if (!it->is_object())
      return JsonError(where, absl::StrCat("resources.", r, ": expected an object"));
    if (it->contains("quota")) { ASSIGN_OR_RETURN(quota[r], convert("quota")); }
    if (it->contains("limit")) { ASSIGN_OR_RETURN(limit[r], convert("limit")); }
    if (it->contains("overQuotaWeight")) {
      const double w = ReadLooseNumber((*it)["overQuotaWeight"]);
      if (!(w >= 0))
        return JsonError(
            where, absl::StrFormat("resources.%s.overQuotaWeight: expected a number >= 0", r));
      oqw[r] = w;
    }
  }
  if (!quota.empty()) q["quota"] = quota;
  if (!limit.empty()) q["limit"] = limit;
  if (!oqw.empty()) q["over_quota_weight"] = oqw;
  return q;
}

absl::StatusOr<Json> FromVolcano(const Json& o, const std::string& name, const std::string& where) {
  const Json spec = o.value("spec", Json::object());
  Json q = {{"name", name}};
  if (spec.contains("parent") && spec["parent"].is_string()) q["parent"] = spec["parent"];
  if (spec.contains("weight")) q["weight"] = ReadLooseNumber(spec["weight"]);
  if (spec.contains("priority")) q["priority"] = spec["priority"];
  if (spec.contains("reclaimable")) q["reclaimable"] = spec["reclaimable"];
  auto amounts = [&](const Json& m, const char* key) -> absl::Status {
    if (!m.is_object()) return JsonError(where, absl::StrCat(key, ": expected a map of resources"));
    Json out = Json::object();
    for (auto it = m.begin(); it != m.end(); ++it)
      RETURN_IF_ERROR(AddAmount(out, it.key(), *it, absl::StrCat(where, " ", key)));
    if (!out.empty()) q[key == std::string("deserved") ? "quota" : key] = out;
    return absl::OkStatus();
  };
  if (spec.contains("deserved")) RETURN_IF_ERROR(amounts(spec["deserved"], "deserved"));
  if (spec.contains("capability")) {
    RETURN_IF_ERROR(amounts(spec["capability"], "capability"));
    q["limit"] = q["capability"];
    q.erase("capability");
  }
  if (spec.contains("guarantee")) {
    const Json g = spec["guarantee"];
    if (!g.is_object()) return JsonError(where, "guarantee: expected {resource: {...}}");
    RETURN_IF_ERROR(amounts(g.value("resource", Json::object()), "guarantee"));
  }
  return q;
}

absl::StatusOr<Json> FromKueue(const Json& o, const std::string& kind, const std::string& name,
                               const std::string& where) {
  const Json spec = o.value("spec", Json::object());
  Json q = {{"name", name}};
  for (const char* key : {"cohort", "cohortName", "parent", "parentName"})
    if (spec.contains(key) && spec[key].is_string() && !spec[key].get<std::string>().empty())
      q["parent"] = spec[key];
  RETURN_IF_ERROR(KueueResourceGroups(spec, where, &q));
  RETURN_IF_ERROR(KueueFairSharing(spec, where, &q));
  if (kind == "ClusterQueue") {
    const Json p = spec.value("preemption", Json::object());
    q["reclaim_within_cohort"] = p.value("reclaimWithinCohort", "Never");
    if (p.contains("borrowWithinCohort")) {
      const Json b = p["borrowWithinCohort"];
      Json bw = {{"policy", b.value("policy", "Never")}};
      if (b.contains("maxPriorityThreshold"))
        bw["max_priority_threshold"] = b["maxPriorityThreshold"];
      q["borrow_within_cohort"] = bw;
    }
  }
  return q;
}

}  // namespace

std::string ResourceName(const std::string& name) {
  if (name == "nvidia.com/gpu") return "gpu";
  if (absl::StartsWith(name, "nvidia.com/mig-"))
    return name.substr(std::string("nvidia.com/").size());
  return name;
}

absl::StatusOr<double> ReadAmount(const std::string& resource, const Json& v, bool unlimited_ok,
                                  const std::string& where) {
  if (unlimited_ok && ((v.is_string() && v.get<std::string>() == "unlimited") ||
                       (v.is_number() && v.get<double>() == -1)))
    return kUnlimited;
  std::string text;
  if (v.is_string()) text = v.get<std::string>();
  else if (v.is_number()) text = v.dump();
  else return JsonError(where, "expected a quantity, got " + v.dump());
  if (resource == "cpu" || resource == "memory") {
    if (v.is_number()) {
      const double x = v.get<double>() * (resource == "cpu" ? 1000.0 : 1.0);
      if (!(x >= 0) || std::isinf(x))
        return JsonError(where, "expected an amount >= 0, got " + v.dump());
      return std::round(x);
    }
    auto q = ParseQuantityScaled(text, resource == "cpu" ? 1000 : 1);
    if (!q.ok()) return JsonError(where, std::string(q.status().message()));
    if (*q < 0) return JsonError(where, "expected an amount >= 0, got " + v.dump());
    return static_cast<double>(*q);
  }
  const double x = ReadLooseNumber(v);
  if (!(x >= 0) || std::isinf(x))
    return JsonError(where, absl::StrFormat("expected a number >= 0%s, got %s",
                                      unlimited_ok ? " or \"unlimited\"" : "", v.dump()));
  return x;
}

const std::vector<std::string>& QuotaFieldNames() {
  static const std::vector<std::string> names = {
      "parent",      "priority",        "creation",           "quota",
      "limit",       "guarantee",       "borrowing_limit",    "lending_limit",
      "over_quota_weight", "reclaim_within_cohort", "borrow_within_cohort"};
  return names;
}

absl::Status ReadQuotaFields(const Json& j, const std::string& owner, std::string* parent,
                             QuotaSpec* q) {
  if (auto p = j.find("parent"); p != j.end() && !p->is_null()) {
    if (!p->is_string()) return JsonError(owner, "parent: expected a queue name");
    *parent = p->get<std::string>();
  }
  if (auto p = j.find("priority"); p != j.end() && !p->is_null()) {
    if (!IsIntegerIn<int>(*p))
      return JsonError(owner, "priority: expected an integer, got " + p->dump());
    q->priority = p->get<int>();
  }
  if (auto c = j.find("creation"); c != j.end() && !c->is_null()) {
    if (!IsIntegerIn<int64_t>(*c) || c->get<int64_t>() < 0)
      return JsonError(owner, "creation: expected an integer >= 0, got " + c->dump());
    q->creation = c->get<int64_t>();
  }
  for (const AmountField& f : kAmountFields) {
    auto m = j.find(f.key);
    if (m == j.end() || m->is_null()) continue;
    if (!m->is_object())
      return JsonError(owner, absl::StrCat(f.key, ": expected a map {resource: amount}"));
    for (auto it = m->begin(); it != m->end(); ++it) {
      const std::string r = ResourceName(it.key());
      const std::string where = absl::StrCat(owner, ": ", f.key, ".", it.key());
      double x = 0;
      if (f.field == &ResourceQuota::over_quota_weight) {
        x = ReadLooseNumber(*it);
        if (!(x >= 0) || std::isinf(x))
          return absl::InvalidArgumentError(where + ": expected a finite number >= 0, got " +
                                            it->dump());
      } else {
        ASSIGN_OR_RETURN(x, ReadAmount(r, *it, f.unlimited_ok, where));
      }
      q->resources[r].*f.field = x;
    }
  }
  if (auto r = j.find("reclaim_within_cohort"); r != j.end() && !r->is_null()) {
    ASSIGN_OR_RETURN(q->reclaim_within_cohort,
                     ReadCohortPreemption(*r, owner + ": reclaim_within_cohort"));
  }
  if (auto b = j.find("borrow_within_cohort"); b != j.end() && !b->is_null())
    RETURN_IF_ERROR(ReadBorrowWithinCohort(*b, owner + ": borrow_within_cohort", q));
  return absl::OkStatus();
}

void WriteQuotaFields(const std::string& parent, const QuotaSpec& q, Json* j) {
  if (!parent.empty()) (*j)["parent"] = parent;
  if (q.priority != 0) (*j)["priority"] = q.priority;
  if (q.creation != 0) (*j)["creation"] = q.creation;
  const ResourceQuota defaults;
  for (const AmountField& f : kAmountFields) {
    Json m = Json::object();
    for (const auto& [r, rq] : q.resources) {
      const double x = rq.*f.field;
      if (x == defaults.*f.field) continue;
      if (std::isinf(x)) m[r] = "unlimited";
      else if (r == "cpu" && f.field != &ResourceQuota::over_quota_weight)
        m[r] = absl::StrCat(static_cast<int64_t>(std::llround(x)), "m");
      else m[r] = x;
    }
    if (!m.empty()) (*j)[f.key] = m;
  }
  if (q.reclaim_within_cohort != CohortPreemption::kAny)
    (*j)["reclaim_within_cohort"] = CohortPreemptionName(q.reclaim_within_cohort);
  if (q.borrow_within_cohort) {
    Json b = {{"policy", "LowerPriority"}};
    if (q.borrow_priority_threshold != std::numeric_limits<int>::max())
      b["max_priority_threshold"] = q.borrow_priority_threshold;
    (*j)["borrow_within_cohort"] = b;
  }
}

absl::StatusOr<QueueSpec> QueueSpecFromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("queue: expected an object");
  QueueSpec s;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty())
    return absl::InvalidArgumentError("queue: name is missing");
  s.name = name->get<std::string>();
  const std::string owner = "queue " + s.name;
  std::vector<std::string> known = QuotaFieldNames();
  for (const char* k : {"name", "weight", "reclaimable", "capability"}) known.push_back(k);
  RETURN_IF_ERROR(CheckKnownKeys(j, owner, known));
  if (auto w = j.find("weight"); w != j.end() && !w->is_null()) {
    if (!w->is_number() || !(w->get<double>() >= 0) || std::isinf(w->get<double>()))
      return JsonError(owner, "weight: must be a finite number >= 0, got " + w->dump());
    s.weight = w->get<double>();
  }
  if (auto r = j.find("reclaimable"); r != j.end() && !r->is_null()) {
    if (!r->is_boolean()) return JsonError(owner, "reclaimable: expected true or false");
    s.reclaimable = r->get<bool>();
  }
  RETURN_IF_ERROR(ReadQuotaFields(j, owner, &s.parent, &s.quota));
  if (auto c = j.find("capability"); c != j.end() && !c->is_null()) {
    if (!c->is_object()) return JsonError(owner, "capability: expected a map {resource: amount}");
    for (auto it = c->begin(); it != c->end(); ++it) {
      const std::string r = ResourceName(it.key());
      ASSIGN_OR_RETURN(double x, ReadAmount(r, *it, true, owner + ": capability." + it.key()));
      double& limit = s.quota.resources[r].limit;
      limit = std::min(limit, x);
    }
  }
  return s;
}

bool IsQueueObject(const Json& j) {
  return j.is_object() && j.contains("apiVersion") && j.contains("kind");
}

absl::StatusOr<std::vector<Json>> QueuesFromObjects(const Json& objects) {
  if (!objects.is_array()) return absl::InvalidArgumentError("queue objects: expected a list");
  std::vector<Json> out;
  std::set<std::string> names, cohorts_named;
  bool volcano = false;
  for (size_t i = 0; i < objects.size(); ++i) {
    const Json& o = objects[i];
    if (!IsQueueObject(o))
      return absl::InvalidArgumentError(absl::StrFormat(
          "queue objects[%d]: expected a Kubernetes object with apiVersion and kind", i));
    const std::string api = o["apiVersion"].is_string() ? o["apiVersion"].get<std::string>() : "";
    const std::string kind = o["kind"].is_string() ? o["kind"].get<std::string>() : "";
    const Json meta = o.value("metadata", Json::object());
    const std::string name = meta.is_object() ? meta.value("name", "") : "";
    const std::string where = absl::StrFormat("%s %s", kind, name.empty() ? "?" : name);
    if (name.empty())
      return absl::InvalidArgumentError(
          absl::StrFormat("queue objects[%d] (%s): metadata.name is missing", i, kind));
    absl::StatusOr<Json> q;
    if (absl::StartsWith(api, "scheduling.run.ai/") && kind == "Queue") {
      q = FromKai(o, name, where);
    } else if (absl::StartsWith(api, "scheduling.volcano.sh/") && kind == "Queue") {
      volcano = true;
      q = FromVolcano(o, name, where);
    } else if (absl::StartsWith(api, "kueue.x-k8s.io/") &&
               (kind == "ClusterQueue" || kind == "Cohort")) {
      q = FromKueue(o, kind, name, where);
      if (q.ok() && q->contains("parent")) cohorts_named.insert((*q)["parent"].get<std::string>());
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "queue objects[%d]: %s %s is not a queue (expected KAI scheduling.run.ai Queue, Kueue "
          "ClusterQueue or Cohort, or Volcano scheduling.volcano.sh Queue)",
          i, api, kind));
    }
    if (!q.ok()) return q.status();
    if (!names.insert(name).second)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: a queue of that name appears twice", where));
    out.push_back(*std::move(q));
  }
  // Kueue creates the cohorts that queues name; Volcano's queues hang below "root".
  for (const std::string& c : cohorts_named)
    if (!names.count(c)) {
      out.push_back(Json{{"name", c}});
      names.insert(c);
    }
  if (volcano && !names.count("root"))
    for (Json& q : out)
      if (q.value("parent", "") == "root") q.erase("parent");
  return out;
}

}  // namespace gpufleet::queues
