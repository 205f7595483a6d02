// Starting a job on GPUs of one model, all of its tasks or none (the jobtime action's gang start):
// each pending task goes, in task order, to the best-scoring node that passes every predicate for
// a copy of the pod restricted to that model; all placements share one statement that commits
// only when every task found a node.
#ifndef GPUFLEET_ENGINE_ACTIONS_PLACE_ON_MODEL_H_
#define GPUFLEET_ENGINE_ACTIONS_PLACE_ON_MODEL_H_

#include <string>
#include <vector>

#include "gpufleet/accounting/fit.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

// `spellings`: the device model names of the GPU model. Ok when the job's pending tasks were all
// placed (committed); otherwise Unschedulable with the reason, and nothing changed.
FitResult PlaceOnModel(Session& s, int job, const std::vector<std::string>& spellings);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_ACTIONS_PLACE_ON_MODEL_H_
