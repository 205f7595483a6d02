// The scheduler configuration is data, as in Volcano's scheduler.conf:
//   {"actions": "enqueue, allocate, backfill",          (or a list; "name(k=v)" or
//                                                         {"name": ..., "arguments": {...}})
//    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
//              {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
//                           {"name": "nodeorder", "arguments": {"binpack": 1}}]}]}
// Parsing builds every action and plugin once, so unknown names and bad arguments are reported
// here, and checks settings that cannot work together.
#ifndef GPUFLEET_ENGINE_CONFIG_H_
#define GPUFLEET_ENGINE_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"

namespace gpufleet::engine {

struct NamedArgs {
  std::string name;
  Json args = Json::object();
};

struct Config {
  std::vector<NamedArgs> actions;
  std::vector<std::vector<NamedArgs>> tiers;
  std::vector<std::vector<std::string>> TierNames() const;
  Json ToJson() const;
};

absl::StatusOr<Config> ConfigFromJson(const Json& j);
// enqueue, allocate, backfill with priority+gang | drf+predicates+proportion+nodeorder+deviceshare.
Json DefaultConfigJson();

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_CONFIG_H_
