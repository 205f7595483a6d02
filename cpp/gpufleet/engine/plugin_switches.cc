#include "gpufleet/engine/plugin_switches.h"

namespace gpufleet::engine {

const std::vector<PluginSwitch>& PluginSwitches() {
  // The full list of Volcano's PluginOption switches. Volcano defaults every one to true except
  // enableHierarchy and enabledClusterOrder, which only an explicit true turns on.
  static const auto* kSwitches = new std::vector<PluginSwitch>{
      {"enableJobOrder", Point::kJobOrder, true, true},
      {"enableHierarchy", std::nullopt, false, false},  // hierarchical drf
      {"enableJobReady", Point::kJobReady, true, true},
      {"enableJobPipelined", std::nullopt, true, true},
      {"enableTaskOrder", Point::kTaskOrder, true, true},
      {"enablePreemptable", Point::kPreemptable, true, true},
      {"enableReclaimable", Point::kReclaimable, true, true},
      {"enablePreemptive", std::nullopt, true, true},
      {"enableQueueOrder", Point::kQueueOrder, true, true},
      {"enabledClusterOrder", std::nullopt, false, true},
      {"enablePredicate", Point::kPredicates, true, true},
      {"enableBestNode", std::nullopt, true, true},
      {"enableNodeOrder", Point::kNodeScore, true, true},
      {"enableTargetJob", Point::kTargetJob, true, true},
      {"enableReservedNodes", std::nullopt, true, true},
      {"enableJobEnqueued", Point::kEnqueueable, true, true},  // Volcano gates enqueueable with it
      {"enabledVictim", std::nullopt, true, true},
      {"enableJobStarving", std::nullopt, true, true},
      {"enabledOverused", Point::kOverused, true, true},
      {"enabledAllocatable", Point::kAllocatable, true, true},
      {"enabledHyperNodeOrder", std::nullopt, true, true},
      {"enabledSubJobReady", std::nullopt, true, true},
      {"enabledSubJobPipelined", std::nullopt, true, true},
      {"enabledSubJobOrder", std::nullopt, true, true},
      {"enabledHyperNodeGradient", std::nullopt, true, true},
  };
  return *kSwitches;
}

const PluginSwitch* FindPluginSwitch(const std::string& key) {
  for (const PluginSwitch& s : PluginSwitches())
    if (key == s.key) return &s;
  return nullptr;
}

const PluginSwitch* SwitchOf(Point point) {
  for (const PluginSwitch& s : PluginSwitches())
    if (s.point == point) return &s;
  return nullptr;
}

std::vector<std::string> PluginSwitchKeys() {
  std::vector<std::string> out;
  for (const PluginSwitch& s : PluginSwitches()) out.push_back(s.key);
  return out;
}

}  // namespace gpufleet::engine
