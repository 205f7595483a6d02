// Registries by name (as OpenSpiel's REGISTER_SPIEL_GAME and the Kubernetes plugin Registry):
// strategies, plugins, policies and actions register a factory under a unique name together with
// what they are, once: a description, parameters with types, defaults and ranges, and typed
// traits (what each kind of registrant must say about itself: a strategy's determinism, an
// action's effects...). Callers list them, validate parameters against the declarations and build
// one from a name plus JSON parameters; the object built reads its name and traits from its
// registration (Registrant), so nothing is declared twice. A duplicate name is recorded and
// reported by DuplicateNames(), which a test asserts is empty; conformance tests build every
// registered name from its declarations.
#ifndef GPUFLEET_CORE_REGISTRY_H_
#define GPUFLEET_CORE_REGISTRY_H_

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
// Whether `v` has the declared type (kInt: any JSON integer; ranges are checked separately).
bool HasParamType(const Json& v, ParamType type);

// A plain range for a number parameter (for a list of numbers: each element). `above` is
// exclusive ("> 0"); the others are inclusive. NaN is never in a declared range; infinity is
// unless `finite` is set (or a bound excludes it).
struct NumberRange {
  std::optional<double> at_least;
  std::optional<double> above;
  std::optional<double> at_most;
  bool finite = false;
  bool empty() const { return !at_least && !above && !at_most && !finite; }
};

// One declared parameter. A null `default_value` means "no default": the factory sees the key
// only when it is given. `example` is a valid value for parameters without a default that the
// registrant needs (documentation, and what the conformance tests build with). `range` and
// `one_of` are checked before the factory runs, so a factory never re-checks a plain range.
struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kAny;
  Json default_value;
  std::string help;
  Json example;
  NumberRange range;
  std::vector<std::string> one_of;  // strings: the values accepted (empty: any)
};

// The declared range for display: "> 0", "finite, >= 1", "in [0, 1]", "one of \"time\",
// \"gpu_time\""; "" when none is declared.
std::string RangeText(const ParamSpec& spec);
// Whether `v` (of the declared type) keeps to the declared range; the error names the owner and
// the parameter: `las: "service" must be one of "gpu_time", "time", got "banana"`.
absl::Status CheckParamRange(const ParamSpec& spec, const Json& v, const std::string& owner);

const ParamSpec* FindParamSpec(const std::vector<ParamSpec>& params, const std::string& key);
// Declared defaults, with examples for the parameters that have none.
Json ExampleParams(const std::vector<ParamSpec>& params);

// Traits of a registrant kind that declares none (test registries).
struct NoTraits {
  Json ToJson() const { return Json::object(); }
};

// What a registrant says about itself, once: its name, a one-line description, its parameters
// and its traits (Traits: one struct per registrant kind, e.g. StrategyTraits in
// placement/strategy.h). Hosts read the traits; listings show Traits::ToJson().
template <typename Traits>
struct Registration {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  Traits traits{};
  bool open_params = false;  // parameters are checked by the factory itself (Python plugins)

  const ParamSpec* FindParam(const std::string& key) const { return FindParamSpec(params, key); }
  Json ExampleParams() const { return gpufleet::ExampleParams(params); }
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
// Checks `params` against the declared parameters (unknown names with a suggestion, types,
// ranges) and returns them with the declared defaults filled in. `owner` names the registrant in
// errors.
absl::StatusOr<Json> CheckDeclaredParams(const std::vector<ParamSpec>& declared,
                                         const Json& params, const std::string& owner);

template <typename T>
class Registry;

// Base of the objects a registry builds: they read their name and traits from the registration
// they were built from (Registry::Create sets it), so a class never restates them. An object
// built by other means (a test's own subclass) has an empty name and the default traits.
template <typename TraitsT>
class Registrant {
 public:
  using Traits = TraitsT;
  virtual ~Registrant() = default;
  const std::string& name() const {
    static const std::string* const kNone = new std::string();
    return registration_ ? registration_->name : *kNone;
  }
  const Traits& traits() const {
    static const Traits* const kDefault = new Traits();
    return registration_ ? registration_->traits : *kDefault;
  }

 private:
  template <typename>
  friend class Registry;
  std::shared_ptr<const Registration<Traits>> registration_;
};

// T::Traits when the kind declares traits (through Registrant), else NoTraits.
template <typename T, typename = void>
struct TraitsOf {
  using type = NoTraits;
};
template <typename T>
struct TraitsOf<T, std::void_t<typename T::Traits>> {
  using type = typename T::Traits;
};

template <typename T>
class Registry {
 public:
  using Traits = typename TraitsOf<T>::type;
  using Record = Registration<Traits>;
  using Factory = std::function<absl::StatusOr<std::unique_ptr<T>>(const Params& params)>;

  static Registry& Global() {
    static Registry* registry = new Registry();
    return *registry;
  }

  // Thread-safe: names may be registered at run time (engine plugins written in Python) while
  // other threads build from the registry. Factories run outside the registry's lock, so a
  // factory may take other locks (a Python plugin's takes the GIL) without ordering problems.
  bool Register(Record registration, Factory factory) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const std::string name = registration.name;
    if (entries_.count(name)) {
      duplicates_.push_back(name);
      return false;
    }
    entries_[name] =
        Entry{std::make_shared<const Record>(std::move(registration)), std::move(factory)};
    return true;
  }

  // Builds `name` from `params`: unknown parameter names, wrong types and values out of their
  // declared range are errors that name the registrant and the parameter; declared defaults are
  // filled in before the factory runs.
  absl::StatusOr<std::unique_ptr<T>> Create(const std::string& name,
                                            const Json& params = Json::object()) const {
    Factory factory;
    std::shared_ptr<const Record> info;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) return Unknown(name, NamesLocked());
      factory = it->second.factory;
      info = it->second.registration;
    }
    if (!params.is_object() && !params.is_null())
      return absl::InvalidArgumentError(
          absl::StrFormat("%s \"%s\": parameters must be an object", T::kKind, name));
    const Json given = params.is_null() ? Json::object() : params;
    absl::StatusOr<std::unique_ptr<T>> made;
    if (info->open_params) {
      made = factory(Params(name, given));
    } else {
      auto filled = CheckDeclaredParams(info->params, given, name);
      if (!filled.ok()) return filled.status();
      made = factory(Params(name, *std::move(filled)));
    }
    if (made.ok() && *made != nullptr) Stamp(**made, std::move(info));
    return made;
  }

  // Gives an object built without Create (a typed constructor, such as MakeFgd) the registration
  // of `name`, as Create would have.
  absl::StatusOr<std::unique_ptr<T>> Adopt(const std::string& name, std::unique_ptr<T> made) const {
    std::shared_ptr<const Record> info;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) return Unknown(name, NamesLocked());
      info = it->second.registration;
    }
    if (made != nullptr) Stamp(*made, std::move(info));
    return made;
  }

  bool Contains(const std::string& name) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return entries_.count(name) > 0;
  }

  std::vector<std::string> Names() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return NamesLocked();
  }
  // What `name` declared about itself (NotFound for an unknown name).
  absl::StatusOr<Record> Info(const std::string& name) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end())
      return absl::NotFoundError(absl::StrFormat("unknown %s \"%s\"", T::kKind, name));
    return *it->second.registration;
  }
  // Every registration, in name order.
  std::vector<Record> Infos() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    std::vector<Record> out;
    for (const auto& [name, entry] : entries_) out.push_back(*entry.registration);
    return out;
  }
  std::vector<std::string> DuplicateNames() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return duplicates_;
  }

 private:
  struct Entry {
    std::shared_ptr<const Record> registration;  // shared with every object built from it
    Factory factory;
  };
  std::vector<std::string> NamesLocked() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
  }
  static absl::Status Unknown(const std::string& name, const std::vector<std::string>& names) {
    std::string hint = ClosestName(name, names);
    return absl::NotFoundError(absl::StrFormat(
        "unknown %s \"%s\"%s; known: %s", T::kKind, name,
        hint.empty() ? "" : absl::StrFormat(" (did you mean \"%s\"?)", hint),
        absl::StrJoin(names, ", ")));
  }
  static void Stamp(T& made, std::shared_ptr<const Record> info) {
    if constexpr (std::is_base_of_v<Registrant<Traits>, T>)
      static_cast<Registrant<Traits>&>(made).registration_ = std::move(info);
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
//                    .traits = {.deterministic = false, .concurrent_safe = false}},
//                   [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
//                     ...});
// (variadic, so the braces may hold commas)
#define GPUFLEET_REGISTER(Type, ...)                                              \
  static const bool GPUFLEET_REGISTRY_CONCAT_(gpufleet_registered_, __COUNTER__) = \
      ::gpufleet::Registry<Type>::Global().Register(__VA_ARGS__)

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_REGISTRY_H_
