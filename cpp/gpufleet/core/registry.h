// Registries by name (as OpenSpiel's REGISTER_SPIEL_GAME and the Kubernetes plugin Registry):
// strategies, plugins, policies and actions register a factory under a unique name together with
// what they are (description, parameters with types and defaults, capabilities). Callers list
// them, validate parameters against the declarations and build one from a name plus JSON
// parameters. A duplicate name is recorded and reported by DuplicateNames(), which a test
// asserts is empty; conformance tests build every registered name from its declarations.
#ifndef GPUFLEET_CORE_REGISTRY_H_
#define GPUFLEET_CORE_REGISTRY_H_

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace gpufleet {

using Json = nlohmann::json;

// How a parameter is checked before a factory sees it.
enum class ParamType { kBool, kInt, kNumber, kString, kNumberList, kAny };
const char* ParamTypeName(ParamType type);
// Whether `v` has the declared type (kInt: any JSON integer; ranges are the factory's to check).
bool HasParamType(const Json& v, ParamType type);

// One declared parameter. A null `default_value` means "no default": the factory sees the key
// only when it is given. `example` is a valid value for parameters without a default that the
// registrant needs (documentation, and what the conformance tests build with).
struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kAny;
  Json default_value;
  std::string help;
  Json example;
};

// What a registrant says about itself: its name (declared here only), a one-line description,
// its parameters and its capabilities (short words that hosts and tests read: an action that
// "places-tasks", a plugin that answers "preemptable", a policy that "needs-durations"...).
// Prefix of a capability that asks for another registrant's capability ("needs:preemptable").
inline constexpr char kNeedsPrefix[] = "needs:";

struct Registration {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  std::vector<std::string> capabilities;
  bool open_params = false;  // parameters are checked by the factory itself (Python plugins)

  bool Has(const std::string& capability) const;
  const ParamSpec* FindParam(const std::string& key) const;
  // Declared defaults, with examples for the parameters that have none.
  Json ExampleParams() const;
};

// The parameters a factory receives: what was given, with every declared default filled in, and
// the registrant's name for error messages.
class Params {
 public:
  Params(std::string owner, Json values) : owner_(std::move(owner)), values_(std::move(values)) {}
  const std::string& owner() const { return owner_; }
  const Json& json() const { return values_; }
  bool Has(const std::string& key) const { return values_.contains(key); }
  // The value of `key`, converted with a range check; an error names the owner and the key.
  template <typename V>
  absl::StatusOr<V> Get(const std::string& key) const;

 private:
  std::string owner_;
  Json values_;
};

// The known name closest to `name` when it is a near miss (a typo or two, scaled with the
// length), else "": the one "did you mean" rule for registries and strict JSON readers.
std::string ClosestName(const std::string& name, const std::vector<std::string>& known);
// Checks `params` against the declared parameters (unknown names with a suggestion, types) and
// returns them with the declared defaults filled in. `owner` names the registrant in errors.
absl::StatusOr<Json> CheckDeclaredParams(const Registration& r, const Json& params,
                                         const std::string& owner);

template <typename T>
class Registry {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<T>>(const Params& params)>;

  static Registry& Global() {
    static Registry* registry = new Registry();
    return *registry;
  }

  // Thread-safe: names may be registered at run time (engine plugins written in Python) while
  // other threads build from the registry. Factories run outside the registry's lock, so a
  // factory may take other locks (a Python plugin's takes the GIL) without ordering problems.
  bool Register(Registration registration, Factory factory) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const std::string name = registration.name;
    if (entries_.count(name)) {
      duplicates_.push_back(name);
      return false;
    }
    entries_[name] = Entry{std::move(registration), std::move(factory)};
    return true;
  }

  // Builds `name` from `params`: unknown parameter names and wrong types are errors that name
  // the registrant and the parameter; declared defaults are filled in before the factory runs.
  absl::StatusOr<std::unique_ptr<T>> Create(const std::string& name,
                                            const Json& params = Json::object()) const {
    Factory factory;
    Registration info;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) {
        std::vector<std::string> names = NamesLocked();
        std::string hint = ClosestName(name, names);
        return absl::NotFoundError(absl::StrFormat(
            "unknown %s \"%s\"%s; known: %s", T::kKind, name,
            hint.empty() ? "" : absl::StrFormat(" (did you mean \"%s\"?)", hint),
            absl::StrJoin(names, ", ")));
      }
      factory = it->second.factory;
      info = it->second.registration;
    }
    if (!params.is_object() && !params.is_null())
      return absl::InvalidArgumentError(
          absl::StrFormat("%s \"%s\": parameters must be an object", T::kKind, name));
    const Json given = params.is_null() ? Json::object() : params;
    if (info.open_params) return factory(Params(name, given));
    auto filled = CheckDeclaredParams(info, given, name);
    if (!filled.ok()) return filled.status();
    return factory(Params(name, *std::move(filled)));
  }

  bool Contains(const std::string& name) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return entries_.count(name) > 0;
  }

  std::vector<std::string> Names() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return NamesLocked();
  }
  std::string Description(const std::string& name) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(name);
    return it == entries_.end() ? "" : it->second.registration.description;
  }
  // What `name` declared about itself (NotFound for an unknown name).
  absl::StatusOr<Registration> Info(const std::string& name) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end())
      return absl::NotFoundError(absl::StrFormat("unknown %s \"%s\"", T::kKind, name));
    return it->second.registration;
  }
  // Every registration, in name order.
  std::vector<Registration> Infos() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<Registration> out;
    for (const auto& [name, entry] : entries_) out.push_back(entry.registration);
    return out;
  }
  // Whether `name` is registered with `capability` (false for unknown names).
  bool HasCapability(const std::string& name, const std::string& capability) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(name);
    return it != entries_.end() && it->second.registration.Has(capability);
  }
  std::vector<std::string> DuplicateNames() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return duplicates_;
  }

 private:
  struct Entry {
    Registration registration;
    Factory factory;
  };
  std::vector<std::string> NamesLocked() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
  }

  mutable std::shared_mutex mu_;
  std::map<std::string, Entry> entries_;  // ordered: listings are stable
  std::vector<std::string> duplicates_;
};

// Parses "name" or "name(key=value, key2=[1,2], key3=\"text\")" into a name and JSON parameters.
// Values are JSON literals (numbers, strings, true/false, lists); bare words are read as strings.
absl::StatusOr<std::pair<std::string, Json>> ParseSpec(const std::string& spec);

// Whether `v` is an integer that V holds exactly. nlohmann's get<int>() converts a float unchecked
// (1e47 -> int is undefined behaviour) and wraps integers that do not fit.
template <typename V>
bool IsIntegerIn(const Json& v) {
  if (v.is_number_unsigned()) return std::in_range<V>(v.get<uint64_t>());
  if (v.is_number_integer()) return std::in_range<V>(v.get<int64_t>());
  return false;
}

// Reads an optional parameter with a type check; the error names the owner and the key.
template <typename V>
absl::StatusOr<V> Param(const Json& params, const std::string& owner, const std::string& key,
                        V fallback) {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) {
    if (!IsIntegerIn<V>(*it))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: parameter \"%s\" has the wrong type (%s; expected an integer from %d to %d)",
          owner, key, it->dump(), std::numeric_limits<V>::min(), std::numeric_limits<V>::max()));
  }
  try {
    return it->template get<V>();
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: parameter \"%s\" has the wrong type (%s)", owner, key, it->dump()));
  }
}

template <typename V>
absl::StatusOr<V> Params::Get(const std::string& key) const {
  if (!values_.contains(key))
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: parameter \"%s\" is required", owner_, key));
  return Param<V>(values_, owner_, key, V{});
}

// Rejects parameters that the owner does not know, so typos are errors.
absl::Status CheckKnownParams(const Json& params, const std::string& owner,
                              const std::vector<std::string>& known);

#define GPUFLEET_REGISTRY_CONCAT_INNER_(a, b) a##b
#define GPUFLEET_REGISTRY_CONCAT_(a, b) GPUFLEET_REGISTRY_CONCAT_INNER_(a, b)
// GPUFLEET_REGISTER(PlacementStrategy,
//                   {.name = "random", .description = "...",
//                    .params = {{"seed", ParamType::kInt, 0, "generator seed"}},
//                    .capabilities = {"random"}},
//                   [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
//                     ...});
// (variadic, so the braces may hold commas)
#define GPUFLEET_REGISTER(Type, ...)                                              \
  static const bool GPUFLEET_REGISTRY_CONCAT_(gpufleet_registered_, __COUNTER__) = \
      ::gpufleet::Registry<Type>::Global().Register(__VA_ARGS__)

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_REGISTRY_H_
