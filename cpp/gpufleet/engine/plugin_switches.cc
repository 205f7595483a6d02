#include "gpufleet/engine/plugin_switches.h"

namespace gpufleet::engine {

const std::vector<PluginSwitch>& PluginSwitches() {
  // The full list of Volcano's PluginOption switches. Volcano defaults every one to true except
  // enableHierarchy and enabledClusterOrder, which only an explicit true turns on.
  static const auto* kSwitches = new std::vector<PluginSwitch>{
      {"enableJobOrder", "job-order", true, true},
      {"enableHierarchy", nullptr, false, false},  // hierarchical drf
      {"enableJobReady", "job-ready", true, true},
      {"enableJobPipelined", nullptr, true, true},
      {"enableTaskOrder", "task-order", true, true},
      {"enablePreemptable", "preemptable", true, true},
      {"enableReclaimable", "reclaimable", true, true},
      {"enablePreemptive", nullptr, true, true},
      {"enableQueueOrder", "queue-order", true, true},
      {"enabledClusterOrder", nullptr, false, true},
      {"enablePredicate", "predicates", true, true},
      {"enableBestNode", nullptr, true, true},
      {"enableNodeOrder", "node-score", true, true},
      {"enableTargetJob", "target-job", true, true},
      {"enableReservedNodes", nullptr, true, true},
      {"enableJobEnqueued", "enqueueable", true, true},  // Volcano gates enqueueable with it
      {"enabledVictim", nullptr, true, true},
      {"enableJobStarving", nullptr, true, true},
      {"enabledOverused", "overused", true, true},
      {"enabledAllocatable", "allocatable", true, true},
      {"enabledHyperNodeOrder", nullptr, true, true},
      {"enabledSubJobReady", nullptr, true, true},
      {"enabledSubJobPipelined", nullptr, true, true},
      {"enabledSubJobOrder", nullptr, true, true},
      {"enabledHyperNodeGradient", nullptr, true, true},
  };
  return *kSwitches;
}

const PluginSwitch* FindPluginSwitch(const std::string& key) {
  for (const PluginSwitch& s : PluginSwitches())
    if (key == s.key) return &s;
  return nullptr;
}

std::vector<std::string> PluginSwitchKeys() {
  std::vector<std::string> out;
  for (const PluginSwitch& s : PluginSwitches()) out.push_back(s.key);
  return out;
}

}  // namespace gpufleet::engine
