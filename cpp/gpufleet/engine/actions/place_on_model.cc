#include "gpufleet/engine/actions/place_on_model.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "gpufleet/engine/actions/place_job.h"
#include "gpufleet/engine/statement.h"

namespace gpufleet::engine {
namespace {

// The pod with its GPUs restricted to the model (within what the pod itself allows).
Pod RestrictToModel(const Pod& pod, const std::vector<std::string>& spellings) {
  Pod out = pod;
  out.gpu_models.clear();
  for (const std::string& m : spellings)
    if (pod.gpu_models.empty() ||
        std::find(pod.gpu_models.begin(), pod.gpu_models.end(), m) != pod.gpu_models.end())
      out.gpu_models.push_back(m);
  return out;
}

}  // namespace

FitResult PlaceOnModel(Session& s, int job_id, const std::vector<std::string>& spellings) {
  JobInfo& job = s.job(job_id);
  ReservationLedger::Lift lift(s, job_id);  // the target may use its holds; outlives `st`
  Statement st(s);
  for (int t : PendingTasks(s, job_id, TaskKind::kWithRequests)) {
    const TaskInfo& task = s.task(t);
    if (!s.Allocatable(s.queue(job.queue), task)) {
      return FitResult::Unschedulable(  // the statement discards itself
          absl::StrFormat("task %s: queue %s would exceed its capability", task.name(),
                          s.queue(job.queue).name()));
    }
    const Pod pod = RestrictToModel(*task.pod, spellings);
    TaskInfo restricted = task;
    restricted.pod = &pod;
    // Not BestNode: its miss cache is keyed on the task's own request, which the restriction
    // changes. Node classes still apply (they depend on nodes only).
    const Placement best = s.FindBestNode(restricted);
    if (!best.ok())
      return FitResult::Unschedulable(absl::StrFormat("task %s: %s", task.name(), best.reason));
    if (absl::Status ok = st.Allocate(t, best.allocation); !ok.ok()) {
      return FitResult::Unschedulable(absl::StrFormat("task %s: %s", task.name(), ok.message()));
    }
  }
  st.Commit();
  return FitResult::Ok();
}

}  // namespace gpufleet::engine
