// Placing one job's pending tasks inside a statement: shared by allocate and backfill.
#ifndef GPUFLEET_ENGINE_ACTIONS_PLACE_JOB_H_
#define GPUFLEET_ENGINE_ACTIONS_PLACE_JOB_H_

#include <memory>

#include "gpufleet/engine/session.h"
#include "gpufleet/engine/statement.h"

namespace gpufleet::engine {

enum class TaskKind { kWithRequests, kBestEffort };

// Places the job's pending tasks of `kind` in task order, each on the best node, stopping at the
// first that fits nowhere. Commits when the job is ready (gang complete), otherwise discards. The
// starvation target's own holds are lifted meanwhile (ReservationLedger::Lift). Sets the job's
// pending reason. Returns the number of tasks bound.
int PlaceJob(Session& s, int job, TaskKind kind);

// Pending tasks of the job of one kind, in the session's task order.
std::vector<int> PendingTasks(const Session& s, int job, TaskKind kind);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_ACTIONS_PLACE_JOB_H_
