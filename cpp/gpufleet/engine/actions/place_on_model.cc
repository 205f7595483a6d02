#include "gpufleet/engine/actions/place_on_model.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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

// The node for one restricted task, or -1 with a kube-style reason. The session's BestNode is not
// used: its infeasibility cache and node classes key on the original request, which the
// restriction changes.
int BestNodeOnModel(Session& s, const TaskInfo& task, std::string* why) {
  int best = -1;
  double best_score = -std::numeric_limits<double>::infinity();
  std::map<std::string, int> misses;
  for (int n = 0; n < s.state().num_nodes(); ++n) {
    FitResult f = s.Predicate(task, n);
    if (!f.ok()) {
      ++misses[f.reason];
      continue;
    }
    const double score = s.NodeScore(task, n);
    if (score > best_score) {
      best_score = score;
      best = n;
    }
  }
  if (best < 0) {
    std::vector<std::string> parts;
    for (const auto& [reason, count] : misses) parts.push_back(absl::StrCat(count, " ", reason));
    *why = absl::StrFormat("0/%d nodes are available", s.state().num_nodes());
    if (!parts.empty()) absl::StrAppend(why, ": ", absl::StrJoin(parts, ", "));
  }
  return best;
}

}  // namespace

bool PlaceOnModel(Session& s, int job_id, const std::vector<std::string>& spellings,
                  std::string* why) {
  JobInfo& job = s.job(job_id);
  Statement st(s);
  for (int t : PendingTasks(s, job_id, TaskKind::kWithRequests)) {
    const TaskInfo& task = s.task(t);
    if (!s.Allocatable(s.queue(job.queue), task)) {
      *why = absl::StrFormat("task %s: queue %s would exceed its capability", task.name(),
                             s.queue(job.queue).name());
      return false;  // the statement discards itself
    }
    const Pod pod = RestrictToModel(*task.pod, spellings);
    TaskInfo restricted = task;
    restricted.pod = &pod;
    std::string miss;
    const int node = BestNodeOnModel(s, restricted, &miss);
    Allocation plan;
    FitResult f;
    if (node >= 0) f = s.state().Plan(pod, node, s.strategy(), &plan);
    if (node < 0 || !f.ok()) {
      *why = absl::StrFormat("task %s: %s", task.name(), node < 0 ? miss : f.reason);
      return false;
    }
    if (absl::Status ok = st.Allocate(t, plan); !ok.ok()) {
      *why = absl::StrFormat("task %s: %s", task.name(), ok.message());
      return false;
    }
  }
  st.Commit();
  return true;
}

}  // namespace gpufleet::engine
