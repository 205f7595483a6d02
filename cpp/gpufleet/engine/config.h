// The scheduler configuration is data, as in Volcano's scheduler.conf:
//   {"actions": "enqueue, allocate, backfill",          (or a list; "name(k=v)" or
//                                                         {"name": ..., "arguments": {...}})
//    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": false}]},
//              {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
//                           {"name": "nodeorder", "arguments": {"binpack": 1}}]}],
//    "configurations": [{"name": "allocate", "arguments": {...}}],   (optional: action arguments)
//    "metrics": {...}}                                               (optional: accepted, unused)
// Volcano's files load unchanged: its ConfigMap wrapper ({"kind": "ConfigMap", "data":
// {"volcano-scheduler.conf": <the configuration>}}) is unwrapped, and its per-plugin switches
// (plugin_switches.h) turn extension points off. Parsing builds every action and plugin once, so
// unknown names and bad arguments are reported here, and checks settings that cannot work
// together.
#ifndef GPUFLEET_ENGINE_CONFIG_H_
#define GPUFLEET_ENGINE_CONFIG_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/core/registry.h"

namespace gpufleet::engine {

struct NamedArgs {
  std::string name;
  Json args = Json::object();
  std::map<std::string, bool> switches;  // Volcano's per-plugin switches, as given
  // The session questions this entry's switches turn off (capability words: "preemptable"...).
  std::vector<std::string> DisabledPoints() const;
};

struct Config {
  std::vector<NamedArgs> actions;
  std::vector<std::vector<NamedArgs>> tiers;
  Json metrics;  // Volcano's metrics settings, kept as given (gpufleet exports no metrics here)
  std::vector<std::vector<std::string>> TierNames() const;
  // Plugin name -> the questions its switches turn off (plugins with none are left out).
  std::map<std::string, std::vector<std::string>> DisabledPoints() const;
  Json ToJson() const;
};

// Accepts the configuration itself or a Kubernetes ConfigMap holding it under
// "volcano-scheduler.conf" (or its only "*.conf" key). The held value must be an object or JSON
// text: YAML text is parsed by the Python reader (gpufleet.engine.load_config) before it gets here.
absl::StatusOr<Config> ConfigFromJson(const Json& j);
// enqueue, allocate, backfill with priority+gang | drf+predicates+proportion+nodeorder+deviceshare.
Json DefaultConfigJson();

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_CONFIG_H_
