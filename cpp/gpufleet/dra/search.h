// The scored search: among the allocations that satisfy every rule, the one with the best Score
// (problem.h). firstAvailable lists are honoured first (the earliest members that allow an
// allocation, group by group), then the score decides. The search counts before it branches
// (bound.h), picks each request's devices as a set rather than in every order, tries one of
// several interchangeable devices only, and cuts branches that cannot beat the best allocation
// found. It stops after problem.budget steps with the best allocation so far (or none, saying
// it gave up).
#ifndef GPUFLEET_DRA_SEARCH_H_
#define GPUFLEET_DRA_SEARCH_H_

#include "gpufleet/dra/problem.h"

namespace gpufleet::dra {

Result ScoredSearch(const Problem& problem);

// The score of a complete allocation (for tests that enumerate allocations themselves).
Score ScoreOf(const Problem& problem, const std::vector<Choice>& choices);

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_SEARCH_H_
