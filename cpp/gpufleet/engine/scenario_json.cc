#include "gpufleet/engine/scenario_json.h"

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/spec_json.h"
#include "gpufleet/io/spec_json.h"

namespace gpufleet::engine {
namespace {

absl::Status Where(const std::string& where, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrFormat("%s: %s", where, s.message()));
}

}  // namespace

absl::Status StartTask(Scheduler* scheduler, const std::string& job_name, int task,
                       const std::string& node) {
  const Job* job = scheduler->FindJob(job_name);
  if (job == nullptr) return absl::NotFoundError(absl::StrFormat("job %s does not exist", job_name));
  if (task < 0 || task >= static_cast<int>(job->tasks.size()))
    return absl::OutOfRangeError(absl::StrFormat("job %s has no task %d", job_name, task));
  ClusterState& state = scheduler->cluster();
  const int index = state.FindNode(node);
  if (index < 0) return absl::NotFoundError(absl::StrFormat("node %s does not exist", node));
  const Pod& pod = job->tasks[task];
  FitResult fit = FitsNodeConstraints(pod, state.node(index));
  Allocation plan;
  auto strategy = MakeStrategy("binpack");
  if (!strategy.ok()) return strategy.status();
  if (fit.ok()) fit = state.Plan(pod, index, **strategy, &plan);
  if (!fit.ok())
    return absl::FailedPreconditionError(
        absl::StrFormat("task %s does not fit on node %s: %s", pod.name, node, fit.reason));
  RETURN_IF_ERROR(state.Reserve(plan));
  return state.Commit(pod.name);
}

absl::Status LoadScenario(const Json& j, Scheduler* scheduler) {
  if (!j.is_object()) return absl::InvalidArgumentError("scenario: expected an object");
  auto list = [&](const char* key) -> absl::StatusOr<Json> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Json::array();
    if (!it->is_array()) return absl::InvalidArgumentError(absl::StrFormat("scenario: '%s' must be a list", key));
    return *it;
  };
  ASSIGN_OR_RETURN(Json nodes, list("nodes"));
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto node = NodeFromJson(nodes[i]);
    if (!node.ok()) return Where(absl::StrFormat("nodes[%d]", i), node.status());
    absl::Status s = scheduler->cluster().AddNode(*node);
    if (!s.ok()) return Where(absl::StrFormat("nodes[%d]", i), s);
  }
  ASSIGN_OR_RETURN(Json queues, list("queues"));
  for (size_t i = 0; i < queues.size(); ++i) {
    auto q = QueueFromJson(queues[i]);
    if (!q.ok()) return Where(absl::StrFormat("queues[%d]", i), q.status());
    // "default" exists from the start; a scenario may redefine it.
    absl::Status s = q->name == "default" ? scheduler->UpdateQueue(*q) : scheduler->AddQueue(*q);
    if (!s.ok()) return Where(absl::StrFormat("queues[%d]", i), s);
  }
  ASSIGN_OR_RETURN(Json jobs, list("jobs"));
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string where = absl::StrFormat("jobs[%d]", i);
    Json spec = jobs[i];
    Json running = Json::array();
    if (spec.is_object() && spec.contains("running")) {
      running = spec["running"];
      spec.erase("running");
      if (!running.is_array())
        return absl::InvalidArgumentError(where + ": 'running' must be a list of node names");
    }
    auto job = JobFromJson(spec);
    if (!job.ok()) return Where(where, job.status());
    if (running.size() > job->tasks.size())
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: 'running' names %d nodes but the job has %d tasks", where,
                          running.size(), job->tasks.size()));
    absl::Status s = scheduler->SubmitJob(*job);
    if (!s.ok()) return Where(where, s);
    for (size_t k = 0; k < running.size(); ++k) {
      if (!running[k].is_string())
        return absl::InvalidArgumentError(absl::StrFormat("%s: running[%d]: expected a node name", where, k));
      s = StartTask(scheduler, job->name, static_cast<int>(k), running[k].get<std::string>());
      if (!s.ok()) return Where(where, s);
    }
  }
  return absl::OkStatus();
}

}  // namespace gpufleet::engine
