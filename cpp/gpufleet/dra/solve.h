// The answer to one allocation question (problem.h): Kubernetes' verdict (allocated,
// unallocatable, or the error its allocator reports), and when allocated the best-scoring
// allocation. Where the verdict depends on the allocator's visiting order (upstream_order.h) that
// order is searched first; the scored search (search.h) then chooses the devices. With
// Objective::kFirst the answer is the allocator's own first allocation.
#ifndef GPUFLEET_DRA_SOLVE_H_
#define GPUFLEET_DRA_SOLVE_H_

#include "absl/status/status.h"
#include "gpufleet/dra/problem.h"

namespace gpufleet::dra {

// What one question may ask for in all (members of every firstAvailable list counted): the
// searches go one level deeper per device, and this keeps them far from the stack's end.
inline constexpr int64_t kMaxDevicesPerQuestion = 4096;

// InvalidArgument names the first index out of range, or too large a question.
absl::Status ValidateProblem(const Problem& problem);

Result Solve(const Problem& problem);

}  // namespace gpufleet::dra

#endif  // GPUFLEET_DRA_SOLVE_H_
