#include "gpufleet/engine/statement.h"

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::engine {

Statement::Statement(Session& session) : session_(session), opened_at_(session.version()) {}

Statement::~Statement() {
  if (!closed_) Discard();
}

absl::Status Statement::Allocate(int id, const Allocation& plan) {
  TaskInfo& task = session_.task(id);
  if (task.status != TaskStatus::kPending)
    return absl::FailedPreconditionError(
        absl::StrFormat("task %s is %s, not pending", task.name(), TaskStatusName(task.status)));
  const int node = session_.state().FindNode(plan.node);
  if (node < 0) return absl::NotFoundError(absl::StrFormat("node %s does not exist", plan.node));
  Allocation a = plan;
  a.pod = task.name();
  if (session_.dra().HasClaims(task.name())) {
    RETURN_IF_ERROR(AllocateClaims(task, node, a));
  } else {
    RETURN_IF_ERROR(session_.state().Reserve(a));
  }
  session_.OnAllocate(task, node);
  ops_.push_back(Op{false, id, {}, "", std::nullopt});
  return absl::OkStatus();
}

absl::Status Statement::AllocateClaims(TaskInfo& task, int node, Allocation& a) {
  // The plan's own devices count as taken while the claims are chosen.
  RETURN_IF_ERROR(session_.state().Reserve(a));
  const NodeView view = session_.state().View(node);
  dra::Result r = session_.dra().Solve(task.name(), a.node, view);
  (void)session_.state().Unreserve(a.pod);
  if (r.verdict != dra::Verdict::kAllocated)
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot allocate the claims of task %s on %s: %s", task.name(), a.node, r.reason));
  const DraHolding& held = session_.dra().Hold(task.name(), a.node, std::move(r.choices), view);
  a.devices.insert(a.devices.end(), held.grants.begin(), held.grants.end());
  if (absl::Status s = session_.state().Reserve(a); !s.ok()) {
    session_.dra().Release(task.name());
    return s;
  }
  return absl::OkStatus();
}

absl::Status Statement::Evict(int id, const std::string& reason) {
  TaskInfo& task = session_.task(id);
  if (task.status != TaskStatus::kRunning)
    return absl::FailedPreconditionError(
        absl::StrFormat("task %s is %s, not running", task.name(), TaskStatusName(task.status)));
  const Allocation* held = session_.state().FindAllocation(task.name());
  if (held == nullptr)
    return absl::InternalError(absl::StrFormat("running task %s holds no allocation", task.name()));
  Op op{true, id, *held, reason, std::nullopt};
  RETURN_IF_ERROR(session_.state().Release(task.name()));
  op.claims = session_.dra().Release(task.name());
  session_.OnDeallocate(task, TaskStatus::kReleasing);
  session_.OnRelease();
  ops_.push_back(std::move(op));
  return absl::OkStatus();
}

void Statement::Commit() {
  if (closed_) return;
  closed_ = true;
  for (const Op& op : ops_) {
    TaskInfo& task = session_.task(op.task);
    if (op.evict) {
      session_.RecordEviction(task, op.saved.node, op.reason);
    } else {
      // Cannot fail: the reservation was made by this statement and nothing else removes it.
      (void)session_.state().Commit(task.name());
      session_.RecordBind(task);
    }
  }
  // Jobs placed here preempted the jobs evicted here (queue trees keep who preempted whom).
  for (const Op& placed : ops_) {
    if (placed.evict) continue;
    for (const Op& evicted : ops_)
      if (evicted.evict)
        session_.NotePreemption(session_.task(placed.task).job, session_.task(evicted.task).job);
    break;  // a statement places one job's tasks
  }
}

void Statement::Discard() {
  if (closed_) return;
  closed_ = true;
  Undo(0);
}

void Statement::RollbackTo(size_t mark) {
  if (!closed_ && mark < ops_.size()) Undo(mark);
}

void Statement::Undo(size_t from) {
  for (auto it = ops_.rbegin(); it != ops_.rend() - from; ++it) {
    TaskInfo& task = session_.task(it->task);
    if (it->evict) {
      // Restores exactly what was released; the state is back to where it was before, so it fits.
      if (session_.state().Reserve(it->saved).ok()) (void)session_.state().Commit(task.name());
      if (it->claims) session_.dra().Restore(task.name(), *it->claims);
      session_.OnAllocate(task, session_.state().FindNode(it->saved.node));
      task.status = TaskStatus::kRunning;
    } else {
      (void)session_.state().Unreserve(task.name());
      session_.dra().Release(task.name());
      session_.OnDeallocate(task, TaskStatus::kPending);
    }
  }
  session_.OnDiscard(opened_at_);
  ops_.resize(from);
}

int Statement::num_allocations() const {
  int n = 0;
  for (const Op& op : ops_) n += !op.evict;
  return n;
}

}  // namespace gpufleet::engine
