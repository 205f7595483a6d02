// An action is one step of the cycle (enqueue, allocate, backfill, preempt, reclaim, jobtime).
// Actions own the loops, the statements and the early exits; every policy question goes to the
// session's plugin callbacks (jobtime asks a
// JobTimePolicy instead). Actions register by name like plugins.
#ifndef GPUFLEET_ENGINE_ACTION_H_
#define GPUFLEET_ENGINE_ACTION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

// Capabilities an action declares in its registration (see core/registry.h).
inline constexpr char kPlacesTasks[] = "places-tasks";  // binds tasks: needs "predicates"
inline constexpr char kAdmitsJobs[] = "admits-jobs";    // must run first in the cycle
inline constexpr char kEvicts[] = "evicts";             // may evict running tasks

class Action {
 public:
  static constexpr char kKind[] = "action";
  virtual ~Action() = default;
  virtual std::string name() const = 0;
  virtual void Execute(Session& session) = 0;
};

std::vector<std::string> ActionNames();
absl::StatusOr<std::unique_ptr<Action>> MakeAction(const std::string& name, const Json& args);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_ACTION_H_
