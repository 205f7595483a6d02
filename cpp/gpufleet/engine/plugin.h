// A plugin answers narrow questions for the engine by registering callbacks on each session
// (job/queue/task order, predicate, node score, preemptable, reclaimable, overused, job ready,
// job valid, allocatable, enqueueable, target job, device strategy). Plugins register by name:
//   GPUFLEET_REGISTER(engine::Plugin, {.name = "gang", .description = "...", .capabilities = ...},
//                     factory);
// and are built from the configuration's arguments; unknown arguments are errors.
#ifndef GPUFLEET_ENGINE_PLUGIN_H_
#define GPUFLEET_ENGINE_PLUGIN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

// Capabilities a plugin declares in its registration: the session questions it answers (an
// action or plugin that declares "needs:<question>" needs a plugin in the tiers that answers it).
inline constexpr char kPredicates[] = "predicates";
inline constexpr char kPreemptable[] = "preemptable";
inline constexpr char kReclaimable[] = "reclaimable";
inline constexpr char kOverused[] = "overused";
inline constexpr char kJobReady[] = "job-ready";

class Plugin {
 public:
  static constexpr char kKind[] = "plugin";
  virtual ~Plugin() = default;
  virtual std::string name() const = 0;
  // Registers callbacks. Runs before jobs are validated.
  virtual void OnSessionOpen(Session& session) = 0;
  // Runs once jobs are validated and queue demands are known (proportion computes shares here).
  virtual void OnSessionReady(Session& session) {}
  virtual void OnSessionClose(Session& session) {}
};

std::vector<std::string> PluginNames();
absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(const std::string& name, const Json& args);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_PLUGIN_H_
