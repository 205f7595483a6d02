// An action is one step of the cycle (enqueue, allocate, backfill, preempt, reclaim, jobtime).
// Actions own the loops, the statements and the early exits; every policy question goes to the
// session's plugin callbacks (jobtime asks a JobTimePolicy instead). Actions register by name like
// plugins, with traits that say what they do to the cluster and what they need answered.
#ifndef GPUFLEET_ENGINE_ACTION_H_
#define GPUFLEET_ENGINE_ACTION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/callback_points.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

struct ActionTraits {
  bool places_tasks = false;  // binds tasks: needs a plugin that answers predicates
  bool evicts = false;        // may evict running tasks
  // Admits jobs: it must run first, and without such an action every valid job counts as
  // admitted.
  bool admits_jobs = false;
  std::vector<Point> needs;  // points it relies on a plugin to answer (preempt: preemptable)
  // `needs`, plus predicates for an action that places tasks.
  PointSet Needs() const;
  Json ToJson() const;
};

class Action : public Registrant<ActionTraits> {
 public:
  static constexpr char kKind[] = "action";
  virtual void Execute(Session& session) = 0;
};

absl::StatusOr<std::unique_ptr<Action>> MakeAction(const std::string& name, const Json& args);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_ACTION_H_
