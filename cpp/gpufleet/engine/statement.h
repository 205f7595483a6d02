// Tentative binds and evictions that become decisions together or not at all (Volcano's
// Statement). Every operation changes the session's accounting at once, through ClusterState
// Reserve/Release, so later questions in the same action see it; Commit turns reservations into
// binds and records the decisions; Discard undoes the operations in reverse order and leaves the
// session exactly as it was. A statement neither committed nor discarded discards itself.
#ifndef GPUFLEET_ENGINE_STATEMENT_H_
#define GPUFLEET_ENGINE_STATEMENT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

class Statement {
 public:
  explicit Statement(Session& session);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Reserves `plan` for a pending task, and allocates the task's claims on the plan's node (their
  // devices' grants join the allocation). Fails (changing nothing) when either does not fit.
  absl::Status Allocate(int task, const Allocation& plan);
  // Releases a running task's allocation (and its claims'); it is not placed again in this
  // session.
  absl::Status Evict(int task, const std::string& reason);
  void Commit();
  void Discard();
  // Undo only the operations after `Mark()` (a failed attempt inside a larger statement).
  size_t Mark() const { return ops_.size(); }
  void RollbackTo(size_t mark);
  int num_allocations() const;
  bool closed() const { return closed_; }

 private:
  struct Op {
    bool evict = false;
    int task = 0;
    Allocation saved;  // an evicted task's allocation, to restore on discard
    std::string reason;
    std::optional<DraHolding> claims;  // an evicted task's claims, to restore on discard
  };
  absl::Status AllocateClaims(TaskInfo& task, int node, Allocation& a);
  void Undo(size_t from);

  Session& session_;
  std::vector<Op> ops_;
  uint64_t opened_at_;
  bool closed_ = false;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_STATEMENT_H_
