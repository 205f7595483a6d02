#include "gpufleet/core/registry.h"

#include <set>

#include "absl/strings/ascii.h"
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
