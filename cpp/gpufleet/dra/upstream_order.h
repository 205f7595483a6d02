// The search Kubernetes' structured allocator runs, in its order: claim by claim, request by
// request, each firstAvailable list member by member, each device slot trying every free
// candidate in visiting order, taking the first complete allocation. It matters where that
// order decides the answer: a request for All devices that a claim constraint refuses makes the
// whole question an error, but only if the search reaches that state before it finds an
// allocation. Subtrees that cannot reach such a request are cut by the counting bound (bound.h)
// when it proves them empty, which leaves the answer unchanged and the exhaustive part small.
#ifndef GPUFLEET_DRA_UPSTREAM_ORDER_H_
#define GPUFLEET_DRA_UPSTREAM_ORDER_H_

#include "gpufleet/dra/problem.h"

namespace gpufleet::dra {

// Whether some All-mode request is under a constraint: only then can the order matter.
bool OrderMatters(const Problem& problem);

// Kubernetes' first allocation (kAllocated), no allocation, or the error it would report; gives
// up (unallocatable, gave_up) after problem.budget steps.
Result UpstreamOrderSearch(const Problem& problem);

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_UPSTREAM_ORDER_H_
