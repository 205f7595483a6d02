// allocate: queues take turns by queue order (lowest share first), each turn placing its next job
// by job order, all of a job's tasks in one statement (Volcano's allocate action). A job whose gang
// cannot complete is discarded whole and the next job gets its turn, so one large job never blocks
// the small ones behind it; the reservation plugin's target (issue 561) goes first, on its hold
// plan if the best-scoring nodes do not take it (reservation_ledger.h). An overused queue gets no
// more turns this cycle.
#include <algorithm>
#include <deque>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/actions/place_job.h"

namespace gpufleet::engine {
namespace {

bool Wants(const Session& s, const JobInfo& j) {
  return j.valid && j.inqueue && !PendingTasks(s, j.id, TaskKind::kWithRequests).empty();
}

class Allocate : public Action {
 public:
  void Execute(Session& s) override {
    const int target = s.TargetJob();
    if (target >= 0 && Wants(s, s.job(target)) && !s.Overused(s.queue(s.job(target).queue)) &&
        PlaceJob(s, target, TaskKind::kWithRequests) == 0 && target == s.reservations().target())
      s.reservations().StartOnPlan(s);
    std::vector<std::deque<int>> jobs(s.queues().size());
    for (const QueueInfo& q : s.queues()) {
      std::vector<int> ids;
      for (int j : q.jobs)
        if (j != target && Wants(s, s.job(j))) ids.push_back(j);
      std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return s.JobLess(a, b); });
      jobs[q.id].assign(ids.begin(), ids.end());
    }
    while (true) {
      int pick = -1;
      for (const QueueInfo& q : s.queues()) {
        if (jobs[q.id].empty()) continue;
        if (s.Overused(q)) {
          for (int j : jobs[q.id])
            s.job(j).reason = absl::StrFormat(
                "queue %s is overused (allocated %s, deserved %s)", q.name(),
                q.allocated.ToString(), q.deserved.ToString());
          jobs[q.id].clear();
          continue;
        }
        if (pick < 0 || s.QueueLess(q.id, pick)) pick = q.id;
      }
      if (pick < 0) break;
      int j = jobs[pick].front();
      jobs[pick].pop_front();
      PlaceJob(s, j, TaskKind::kWithRequests);
    }
  }
};

GPUFLEET_REGISTER(Action,
    {.name = "allocate",
     .description = "place admitted jobs whole, queues taking turns by share",
     .traits = {.places_tasks = true}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Action>> {
      return std::unique_ptr<Action>(new Allocate());
    });

}  // namespace
}  // namespace gpufleet::engine
