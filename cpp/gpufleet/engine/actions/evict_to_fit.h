// Placing a starving job by evicting running tasks: shared by preempt (victims in the same queue)
// and reclaim (victims in other queues). Plugins name the victims; the mechanism orders them
// (lowest job priority, then lowest task priority, then most recently listed), evicts one at a
// time on a node until the task fits, and rolls the node back if it never does. If an eviction
// would leave a victim's gang partly running, the rest of that gang is evicted with it.
#ifndef GPUFLEET_ENGINE_ACTIONS_EVICT_TO_FIT_H_
#define GPUFLEET_ENGINE_ACTIONS_EVICT_TO_FIT_H_

#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

enum class VictimScope { kSameQueue, kOtherQueues };

// How quota is checked: before any eviction (the queue's room must exist already), or after the
// victims leave (queue trees: a reclaim frees quota as well as devices, Kueue issue 9466).
enum class QuotaCheck { kBeforeEvicting, kAfterVictims };

// Places the job's pending tasks, evicting where needed, all in one statement that commits only
// when the job is ready. Returns the number of tasks bound.
int EvictToFit(Session& s, int job, VictimScope scope,
               QuotaCheck quota = QuotaCheck::kBeforeEvicting);

// Jobs an action should try to help, in queue then job order.
std::vector<int> StarvingJobs(const Session& s, int queue);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_ACTIONS_EVICT_TO_FIT_H_
