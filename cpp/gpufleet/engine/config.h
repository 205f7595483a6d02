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
#include "gpufleet/engine/callback_points.h"

namespace gpufleet::engine {

struct NamedArgs {
  std::string name;
  Json args = Json::object();
  std::map<std::string, bool> switches;  // Volcano's per-plugin switches, as given
  // The callback points this entry's switches turn off.
  PointSet DisabledPoints() const;
};

struct Config {
  std::vector<NamedArgs> actions;
  std::vector<std::vector<NamedArgs>> tiers;
  Json metrics;  // Volcano's metrics settings, kept as given (gpufleet exports no metrics here)
  std::vector<std::vector<std::string>> TierNames() const;
  // Plugin name -> the points its switches turn off (plugins with none are left out).
  std::map<std::string, PointSet> DisabledPoints() const;
  Json ToJson() const;
};

// Accepts the configuration itself or a Kubernetes ConfigMap holding it under
// "volcano-scheduler.conf" (or its only "*.conf" key). The held value must be an object or JSON
// text: YAML text is parsed by the Python reader (gpufleet.engine.load_config) before it gets here.
absl::StatusOr<Config> ConfigFromJson(const Json& j);
// What an action or plugin of a configuration needs answered, from its traits.
struct Need {
  std::string who;
  PointSet points;
};
std::vector<Need> NeedsOf(const Config& c);
// Whether every need is answered: `answered` holds the points that the plugins in the tiers
// registered (observed on a session). An error names the one who needs it and the registered
// plugins that answer it.
absl::Status CheckNeedsAnswered(const std::vector<Need>& needs, const PointSet& answered);
// enqueue, allocate, backfill with priority+gang | drf+predicates+proportion+nodeorder+deviceshare.
Json DefaultConfigJson();

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_CONFIG_H_
