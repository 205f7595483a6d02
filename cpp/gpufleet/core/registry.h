// Registries by name (as OpenSpiel's REGISTER_SPIEL_GAME and the Kubernetes plugin Registry):
// strategies, plugins, policies and actions register a factory under a unique name; callers list
// the names and build one from a name plus JSON parameters. A duplicate name is recorded and
// reported by DuplicateNames(), which a test asserts is empty.
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

template <typename T>
class Registry {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<T>>(const Json& params)>;

  static Registry& Global() {
    static Registry* registry = new Registry();
    return *registry;
  }

  // Thread-safe: names may be registered at run time (engine plugins written in Python) while
  // other threads build from the registry. Factories run outside the registry's lock, so a
  // factory may take other locks (a Python plugin's takes the GIL) without ordering problems.
  bool Register(const std::string& name, std::string description, Factory factory) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (entries_.count(name)) {
      duplicates_.push_back(name);
      return false;
    }
    entries_[name] = Entry{std::move(description), std::move(factory)};
    return true;
  }

  absl::StatusOr<std::unique_ptr<T>> Create(const std::string& name,
                                            const Json& params = Json::object()) const {
    Factory factory;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end())
        return absl::NotFoundError(absl::StrFormat("unknown %s \"%s\"; known: %s", T::kKind,
                                                   name, absl::StrJoin(NamesLocked(), ", ")));
      factory = it->second.factory;
    }
    if (!params.is_object() && !params.is_null())
      return absl::InvalidArgumentError(
          absl::StrFormat("%s \"%s\": parameters must be an object", T::kKind, name));
    return factory(params.is_null() ? Json::object() : params);
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
    return it == entries_.end() ? "" : it->second.description;
  }
  std::vector<std::string> DuplicateNames() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return duplicates_;
  }

 private:
  struct Entry {
    std::string description;
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

// Rejects parameters that the owner does not know, so typos are errors.
absl::Status CheckKnownParams(const Json& params, const std::string& owner,
                              const std::vector<std::string>& known);

#define GPUFLEET_REGISTRY_CONCAT_INNER_(a, b) a##b
#define GPUFLEET_REGISTRY_CONCAT_(a, b) GPUFLEET_REGISTRY_CONCAT_INNER_(a, b)
// GPUFLEET_REGISTER(PlacementStrategy, "binpack", "best fit", [](const Json& p) {...});
#define GPUFLEET_REGISTER(Type, name, description, factory)                      \
  static const bool GPUFLEET_REGISTRY_CONCAT_(gpufleet_registered_, __COUNTER__) = \
      ::gpufleet::Registry<Type>::Global().Register(name, description, factory)

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_REGISTRY_H_
