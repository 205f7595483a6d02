#include "gpufleet/engine/action.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {

std::vector<std::string> PluginNames() { return Registry<Plugin>::Global().Names(); }
absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(const std::string& name, const Json& args) {
  return Registry<Plugin>::Global().Create(name, args);
}
std::vector<std::string> ActionNames() { return Registry<Action>::Global().Names(); }
absl::StatusOr<std::unique_ptr<Action>> MakeAction(const std::string& name, const Json& args) {
  return Registry<Action>::Global().Create(name, args);
}

}  // namespace gpufleet::engine
