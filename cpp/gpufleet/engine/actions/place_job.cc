#include "gpufleet/engine/actions/place_job.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "gpufleet/engine/actions/place_by_topology.h"

namespace gpufleet::engine {

std::vector<int> PendingTasks(const Session& s, int job, TaskKind kind) {
  std::vector<int> out;
  const bool best_effort = kind == TaskKind::kBestEffort;
  for (int t : s.jobs()[job].tasks) {
    const TaskInfo& task = s.tasks()[t];
    if (task.status == TaskStatus::kPending && task.best_effort == best_effort) out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return s.TaskLess(a, b); });
  return out;
}

int PlaceJob(Session& s, int job_id, TaskKind kind) {
  JobInfo& job = s.job(job_id);
  std::vector<int> tasks = PendingTasks(s, job_id, kind);
  if (tasks.empty()) return 0;
  ReservationLedger::Lift lift(s, job_id);  // outlives the statement
  auto st = std::make_unique<Statement>(s);
  std::string why;
  if (kind == TaskKind::kWithRequests && UsesTopology(s, job)) {
    // All or none: a gang that does not fit its domain places nothing.
    if (!PlaceByTopology(s, job_id, tasks, *st, &why)) {
      st->Discard();
      st = std::make_unique<Statement>(s);
    }
  } else {
    for (int t : tasks) {
      TaskInfo& task = s.task(t);
      const QueueInfo& q = s.queue(job.queue);
      if (!s.Allocatable(q, task)) {
        why = absl::StrFormat("queue %s would exceed its capability (%s)", q.name(),
                              q.spec->capability.ToString());
        break;
      }
      const Placement best = s.BestNode(task);
      if (!best.ok()) {
        why = absl::StrFormat("task %s: %s", task.name(), best.reason);
        break;
      }
      absl::Status ok = st->Allocate(t, best.allocation);
      if (!ok.ok()) {
        why = absl::StrFormat("task %s: %s", task.name(), ok.message());
        break;
      }
    }
  }
  const int placed = st->num_allocations();
  if (s.JobReady(job)) {
    st->Commit();
    job.reason = why.empty() ? "" : absl::StrFormat("%d tasks running; more wait: %s", job.occupied, why);
    return placed;
  }
  job.reason = absl::StrFormat("gang: %d/%d tasks could run, min_available %d; %s", job.occupied,
                               job.tasks.size(), job.min_available(),
                               why.empty() ? "waiting for the rest of the gang" : why);
  st->Discard();
  return 0;
}

}  // namespace gpufleet::engine
