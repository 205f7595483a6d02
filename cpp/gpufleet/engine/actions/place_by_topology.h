// Placing a job's pending tasks across network topology levels, inside the caller's statement:
// the gang placer (topology/gang_placer.h) chooses the domain and each node's count over the
// session's accounting (holds included), then every task is planned on its node after the
// session's predicates agree. Tasks with equal requests in a row form one group (a leader, then
// its workers); a job of one group carries its whole constraint on that group (slices, balance),
// a job of several keeps its required and preferred levels for all of them together.
#ifndef GPUFLEET_ENGINE_ACTIONS_PLACE_BY_TOPOLOGY_H_
#define GPUFLEET_ENGINE_ACTIONS_PLACE_BY_TOPOLOGY_H_

#include <string>
#include <vector>

#include "gpufleet/engine/session.h"
#include "gpufleet/engine/statement.h"

namespace gpufleet::engine {

// Whether the job is placed by topology in this session (a topology is set and the job asks).
bool UsesTopology(const Session& s, const JobInfo& job);

// Allocates `tasks` (the job's pending tasks, in task order) through `st`, all or none; false
// with the reason in `why` (naming the level a requirement fails at).
bool PlaceByTopology(Session& s, int job, const std::vector<int>& tasks, Statement& st,
                     std::string* why);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_ACTIONS_PLACE_BY_TOPOLOGY_H_
