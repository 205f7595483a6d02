// Volcano's per-plugin switches: a tier entry may turn off one of its plugin's extension points
// ("enablePreemptable: false" on gang keeps gang's victims answer out of preempt). A point is on
// unless its switch is false. The keys are spelled as Volcano's configuration spells them
// (pkg/scheduler/conf), including its mix of "enable" and "enabled".
#ifndef GPUFLEET_ENGINE_PLUGIN_SWITCHES_H_
#define GPUFLEET_ENGINE_PLUGIN_SWITCHES_H_

#include <optional>
#include <string>
#include <vector>

#include "gpufleet/engine/callback_points.h"

namespace gpufleet::engine {

struct PluginSwitch {
  const char* key;    // as written in the configuration
  std::optional<Point> point;  // the callback point it gates; none where gpufleet has no such
                               // point (accepted, nothing to gate)
  bool on_when_absent;
  bool supported_on;  // false: turning it on asks for something gpufleet does not implement
};

const std::vector<PluginSwitch>& PluginSwitches();
const PluginSwitch* FindPluginSwitch(const std::string& key);
// The switch that gates `point`, or nullptr (job-valid and device-strategy have none).
const PluginSwitch* SwitchOf(Point point);
// Every switch key, for "unknown key" messages.
std::vector<std::string> PluginSwitchKeys();

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_PLUGIN_SWITCHES_H_
