#include "gpufleet/core/registry.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gpufleet/core/json_text.h"

namespace gpufleet {

absl::StatusOr<std::pair<std::string, Json>> ParseSpec(const std::string& spec) {
  std::string text(absl::StripAsciiWhitespace(spec));
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("spec \"%s\": %s", spec, why));
  };
  size_t open = text.find('(');
  if (open == std::string::npos) {
    if (text.empty()) return bad("empty name");
    return std::make_pair(text, Json::object());
  }
  if (text.back() != ')') return bad("missing closing parenthesis");
  std::string name(absl::StripAsciiWhitespace(text.substr(0, open)));
  if (name.empty()) return bad("empty name");
  std::string body = text.substr(open + 1, text.size() - open - 2);
  Json params = Json::object();
  // Split on commas at depth 0 (lists may contain commas).
  std::vector<std::string> parts;
  int depth = 0;
  bool in_string = false;
  std::string current;
  for (char c : body) {
    if (c == '"') in_string = !in_string;
    if (!in_string && (c == '[' || c == '{')) ++depth;
    if (!in_string && (c == ']' || c == '}')) --depth;
    if (!in_string && depth == 0 && c == ',') {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0 || in_string) return bad("unbalanced brackets or quotes");
  if (!absl::StripAsciiWhitespace(current).empty() || !parts.empty()) parts.push_back(current);
  for (const std::string& part : parts) {
    size_t eq = part.find('=');
    if (eq == std::string::npos) return bad(absl::StrFormat("\"%s\" is not key=value", part));
    std::string key(absl::StripAsciiWhitespace(part.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(part.substr(eq + 1)));
    if (key.empty()) return bad("empty key");
    // Not JSON: a bare word, read as a string. Nested too deep: an error (see json_text.h).
    absl::StatusOr<Json> parsed = ParseJsonText(value, key);
    if (parsed.status().code() == absl::StatusCode::kOutOfRange)
      return bad(std::string(parsed.status().message()));
    params[key] = parsed.ok() ? *std::move(parsed) : Json(value);
  }
  return std::make_pair(name, params);
}

absl::Status CheckKnownParams(const Json& params, const std::string& owner,
                              const std::vector<std::string>& known) {
  if (params.is_null()) return absl::OkStatus();
  if (!params.is_object())  // key() would throw on a list
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: parameters must be an object, got %s", owner, params.dump()));
  std::set<std::string> allowed(known.begin(), known.end());
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!allowed.count(it.key()))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown parameter \"%s\"; known: %s", owner, it.key(), absl::StrJoin(known, ", ")));
  }
  return absl::OkStatus();
}

}  // namespace gpufleet

namespace gpufleet {

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kBool: return "bool";
    case ParamType::kInt: return "int";
    case ParamType::kNumber: return "number";
    case ParamType::kString: return "string";
    case ParamType::kNumberList: return "list of numbers";
    case ParamType::kAny: return "any";
  }
  return "any";
}

bool HasParamType(const Json& v, ParamType type) {
  switch (type) {
    case ParamType::kBool: return v.is_boolean();
    case ParamType::kInt: return v.is_number_integer();
    case ParamType::kNumber: return v.is_number();
    case ParamType::kString: return v.is_string();
    case ParamType::kNumberList:
      if (!v.is_array()) return false;
      for (const Json& e : v)
        if (!e.is_number()) return false;
      return true;
    case ParamType::kAny: return true;
  }
  return true;
}

const ParamSpec* FindParamSpec(const std::vector<ParamSpec>& params, const std::string& key) {
  for (const ParamSpec& p : params)
    if (p.name == key) return &p;
  return nullptr;
}

Json ExampleParams(const std::vector<ParamSpec>& params) {
  Json out = Json::object();
  for (const ParamSpec& p : params)
    if (p.default_value.is_null() && !p.example.is_null()) out[p.name] = p.example;
  return out;
}

std::string RangeText(const ParamSpec& spec) {
  if (!spec.one_of.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& v : spec.one_of) quoted.push_back(Json(v).dump());
    return "one of " + absl::StrJoin(quoted, ", ");
  }
  const NumberRange& r = spec.range;
  const std::optional<double> low = r.above ? r.above : r.at_least;
  std::string bounds;
  if (low && r.at_most)
    bounds = absl::StrFormat("in %c%g, %g]", r.above ? '(' : '[', *low, *r.at_most);
  else if (low)
    bounds = absl::StrFormat("%s %g", r.above ? ">" : ">=", *low);
  else if (r.at_most)
    bounds = absl::StrFormat("<= %g", *r.at_most);
  if (!r.finite) return bounds;
  return bounds.empty() ? "finite" : "finite, " + bounds;
}

namespace {

bool InRange(const NumberRange& r, double v) {
  return !std::isnan(v) && (!r.finite || std::isfinite(v)) && (!r.at_least || v >= *r.at_least) &&
         (!r.above || v > *r.above) && (!r.at_most || v <= *r.at_most);
}

// "must be >= 0", "must be a finite number >= 1" (the range as a requirement).
std::string Requirement(const ParamSpec& spec) {
  NumberRange bounds = spec.range;
  bounds.finite = false;
  const std::string text = RangeText({.range = bounds});
  if (!spec.range.finite) return text;
  return text.empty() ? "a finite number" : "a finite number " + text;
}

}  // namespace

absl::Status CheckParamRange(const ParamSpec& spec, const Json& v, const std::string& owner) {
  if (!spec.one_of.empty() && v.is_string()) {
    const std::string s = v.get<std::string>();
    if (std::find(spec.one_of.begin(), spec.one_of.end(), s) == spec.one_of.end())
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: \"%s\" must be %s, got %s", owner, spec.name, RangeText(spec), v.dump()));
    return absl::OkStatus();
  }
  if (spec.range.empty()) return absl::OkStatus();
  if (v.is_number() && !InRange(spec.range, v.get<double>()))
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: \"%s\" must be %s, got %s", owner, spec.name, Requirement(spec), v.dump()));
  if (v.is_array())
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].is_number() && !InRange(spec.range, v[i].get<double>()))
        return absl::InvalidArgumentError(absl::StrFormat("%s: \"%s\"[%d] must be %s, got %s",
                                                          owner, spec.name, i, Requirement(spec),
                                                          v[i].dump()));
  return absl::OkStatus();
}

namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string ClosestName(const std::string& name, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  size_t best_distance = 0, best_prefix = 0;
  for (const std::string& k : known) {
    const size_t d = EditDistance(name, k);
    // Ties go to the longer shared prefix: "gpu" is closer to "gpus" than to "cpu".
    const size_t prefix =
        std::mismatch(name.begin(), name.end(), k.begin(), k.end()).first - name.begin();
    if (best == nullptr || d < best_distance || (d == best_distance && prefix > best_prefix)) {
      best = &k;
      best_distance = d;
      best_prefix = prefix;
    }
  }
  // A near miss: a typo or two, scaled with the word so short keys don't match everything.
  if (best != nullptr && best_distance <= std::max<size_t>(2, best->size() / 3)) return *best;
  return "";
}

absl::StatusOr<Json> CheckDeclaredParams(const std::vector<ParamSpec>& declared,
                                         const Json& params, const std::string& owner) {
  if (!params.is_object())
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: parameters must be an object, got %s", owner, params.dump()));
  std::vector<std::string> known;
  for (const ParamSpec& p : declared) known.push_back(p.name);
  Json out = params;
  for (auto it = params.begin(); it != params.end(); ++it) {
    const ParamSpec* spec = FindParamSpec(declared, it.key());
    if (spec == nullptr) {
      std::string hint = ClosestName(it.key(), known);
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown parameter \"%s\"%s; known: %s", owner, it.key(),
          hint.empty() ? "" : absl::StrFormat(" (did you mean \"%s\"?)", hint),
          known.empty() ? "none" : absl::StrJoin(known, ", ")));
    }
    if (!HasParamType(*it, spec->type))
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: parameter \"%s\" has the wrong type (%s; expected %s)", owner,
                          it.key(), it->dump(), ParamTypeName(spec->type)));
    if (absl::Status in_range = CheckParamRange(*spec, *it, owner); !in_range.ok())
      return in_range;
  }
  for (const ParamSpec& p : declared)
    if (!out.contains(p.name) && !p.default_value.is_null()) out[p.name] = p.default_value;
  return out;
}

}  // namespace gpufleet
