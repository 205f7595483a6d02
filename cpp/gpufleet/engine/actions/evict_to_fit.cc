#include "gpufleet/engine/actions/evict_to_fit.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/actions/place_job.h"
#include "gpufleet/engine/statement.h"
#include "gpufleet/placement/node_plan.h"

namespace gpufleet::engine {
namespace {

std::vector<int> Candidates(const Session& s, const TaskInfo& task, int node, VictimScope scope) {
  const int queue = s.jobs()[task.job].queue;
  std::vector<int> out;
  for (const TaskInfo& t : s.tasks()) {
    if (t.status != TaskStatus::kRunning || t.node != node || t.job == task.job) continue;
    const int victim_queue = s.jobs()[t.job].queue;
    if (scope == VictimScope::kSameQueue && victim_queue != queue) continue;
    if (scope == VictimScope::kOtherQueues &&
        (victim_queue == queue || !s.queues()[victim_queue].spec->reclaimable))
      continue;
    out.push_back(t.id);
  }
  return out;
}

// Evicts `victim`, and the rest of its gang if the gang would otherwise run partly.
absl::Status EvictWithGang(Session& s, Statement& st, int victim, const std::string& reason) {
  RETURN_IF_ERROR(st.Evict(victim, reason));
  JobInfo& j = s.job(s.task(victim).job);
  if (j.occupied > 0 && j.occupied < j.min_available()) {
    for (int t : j.tasks)
      if (s.task(t).status == TaskStatus::kRunning) {
        RETURN_IF_ERROR(st.Evict(t, reason + " (rest of its gang)"));
      }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int> StarvingJobs(const Session& s, int queue) {
  std::vector<int> out;
  for (int j : s.queues()[queue].jobs) {
    const JobInfo& job = s.jobs()[j];
    if (job.valid && job.inqueue && !PendingTasks(s, j, TaskKind::kWithRequests).empty())
      out.push_back(j);
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return s.JobLess(a, b); });
  return out;
}

int EvictToFit(Session& s, int job_id, VictimScope scope, QuotaCheck quota) {
  const bool after = quota == QuotaCheck::kAfterVictims;
  JobInfo& job = s.job(job_id);
  std::vector<int> tasks = PendingTasks(s, job_id, TaskKind::kWithRequests);
  if (tasks.empty()) return 0;
  ReservationLedger::Lift lift(s, job_id);  // the target may use its holds; outlives `st`
  Statement st(s);
  std::string why;
  const std::string verb = scope == VictimScope::kSameQueue ? "preempted" : "reclaimed";
  for (int t : tasks) {
    TaskInfo& task = s.task(t);
    const QueueInfo& q = s.queue(job.queue);
    auto fits_on = [&](int node) {
      return s.Predicate(task, node).ok() && (!after || s.Allocatable(q, task));
    };
    if (!after && !s.Allocatable(q, task)) {
      why = absl::StrFormat("queue %s would exceed its capability", q.name());
      break;
    }
    const Placement best = s.BestNode(task);
    if (best.ok() && (!after || s.Allocatable(q, task))) {
      if (!st.Allocate(t, best.allocation).ok()) break;
      continue;
    }
    bool placed = false;
    for (int node = 0; node < s.state().num_nodes() && !placed; ++node) {
      if (s.Predicate(task, node).code == FitCode::kUnschedulableAndUnresolvable) continue;
      std::vector<int> cands = Candidates(s, task, node, scope);
      if (cands.empty()) continue;
      std::vector<int> victims = scope == VictimScope::kSameQueue ? s.Preemptable(task, cands)
                                                                  : s.Reclaimable(task, cands);
      std::stable_sort(victims.begin(), victims.end(), [&](int a, int b) {
        const TaskInfo &ta = s.task(a), &tb = s.task(b);
        int pa = s.job(ta.job).priority(), pb = s.job(tb.job).priority();
        if (pa != pb) return pa < pb;
        if (ta.pod->priority != tb.pod->priority) return ta.pod->priority < tb.pod->priority;
        return a > b;
      });
      const size_t mark = st.Mark();
      const std::string reason =
          scope == VictimScope::kSameQueue
              ? absl::StrFormat("%s by task %s of job %s (priority %d)", verb, task.name(),
                                job.name(), job.priority())
              : absl::StrFormat("%s for queue %s (task %s of job %s)", verb, q.name(),
                                task.name(), job.name());
      for (int v : victims) {
        if (s.task(v).status != TaskStatus::kRunning) continue;  // taken with an earlier gang
        if (!EvictWithGang(s, st, v, reason).ok()) break;
        if (fits_on(node)) break;
      }
      // The predicates judged labels and taints.
      if (fits_on(node)) {
        const Placement plan =
            PlanOnNode(s.state(), *task.pod, node, s.strategy(), Admission::kCapacityOnly);
        placed = plan.ok() && st.Allocate(t, plan.allocation).ok();
      }
      if (!placed) st.RollbackTo(mark);
    }
    if (!placed) {
      why = absl::StrFormat("task %s: %s; and no node frees enough by eviction", task.name(),
                            best.ok() ? absl::StrFormat("queue %s has no quota left for it",
                                                        q.name())
                                      : best.reason);
      break;
    }
  }
  const int placed = st.num_allocations();
  if (s.JobReady(job)) {
    st.Commit();
    if (!why.empty()) job.reason = why;
    return placed;
  }
  st.Discard();
  if (!why.empty())
    job.reason = absl::StrFormat("gang: %d/%d tasks could run, min_available %d; %s", job.occupied,
                                 job.tasks.size(), job.min_available(), why);
  return 0;
}

}  // namespace gpufleet::engine
