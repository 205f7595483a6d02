// A plugin answers narrow questions for the engine by registering callbacks on each session, one
// per callback point it answers (callback_points.h: job/queue/task order, predicates, node score,
// preemptable, reclaimable, overused, job ready, job valid, allocatable, enqueueable, target job,
// device strategy). What a plugin answers is what it registers: the session records it, so a
// registration declares only what the plugin needs from others. Plugins register by name:
//   GPUFLEET_REGISTER(engine::Plugin, {.name = "gang", .description = "...", .params = ...},
//                     factory);
// and are built from the configuration's arguments; unknown arguments are errors.
#ifndef GPUFLEET_ENGINE_PLUGIN_H_
#define GPUFLEET_ENGINE_PLUGIN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/callback_points.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

struct PluginTraits {
  // Points it relies on another plugin in the tiers to answer (reservation: job-ready).
  std::vector<Point> needs;
  Json ToJson() const;
};

class Plugin : public Registrant<PluginTraits> {
 public:
  static constexpr char kKind[] = "plugin";
  // Registers callbacks, under name(). Runs before jobs are validated; what it registers may
  // depend on its arguments, not on the session's contents (the configuration check observes it
  // on an empty session).
  virtual void OnSessionOpen(Session& session) = 0;
  // Runs once jobs are validated and queue demands are known (proportion computes shares here).
  virtual void OnSessionReady(Session& session) {}
  virtual void OnSessionClose(Session& session) {}
};

absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(const std::string& name, const Json& args);
// Builds `name` from `args` and opens it on an empty session with the `disabled` points switched
// off: the points it answers. Errors are the factory's.
absl::StatusOr<PointSet> ObserveAnswers(const std::string& name, const Json& args,
                                        PointSet disabled = {});
// The registered plugins that answer `point` when built from their declared defaults.
std::vector<std::string> PluginsAnswering(Point point);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_PLUGIN_H_
