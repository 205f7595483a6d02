#include "gpufleet/engine/scenario_json.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/queue_tree_specs.h"
#include "gpufleet/engine/spec_json.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/io/strict_json.h"
#include "gpufleet/placement/node_plan.h"

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
  auto strategy = MakeStrategy("binpack");
  if (!strategy.ok()) return strategy.status();
  const Placement plan = PlanOnNode(state, pod, index, **strategy);
  if (!plan.ok())
    return absl::FailedPreconditionError(
        absl::StrFormat("task %s does not fit on node %s: %s", pod.name, node, plan.reason));
  RETURN_IF_ERROR(state.Reserve(plan.allocation));
  return state.Commit(pod.name);
}

absl::Status LoadScenario(const Json& j, Scheduler* scheduler) {
  if (!j.is_object()) return absl::InvalidArgumentError("scenario: expected an object");
  RETURN_IF_ERROR(CheckKnownKeys(j, "scenario", {"nodes", "queues", "jobs"}));
  auto list = [&](const char* key) -> absl::StatusOr<Json> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Json::array();
    if (!it->is_array()) return absl::InvalidArgumentError(absl::StrFormat("scenario: '%s' must be a list", key));
    return *it;
  };
  // Every entry is read before anything is added, so a malformed entry anywhere leaves the
  // scheduler as it was.
  ASSIGN_OR_RETURN(Json node_specs, list("nodes"));
  ASSIGN_OR_RETURN(Json queue_specs, list("queues"));
  ASSIGN_OR_RETURN(Json job_specs, list("jobs"));
  std::vector<Node> nodes;
  std::set<std::string> node_names;
  for (size_t i = 0; i < node_specs.size(); ++i) {
    auto node = NodeFromJson(node_specs[i]);
    if (!node.ok()) return Where(absl::StrFormat("nodes[%d]", i), node.status());
    if (scheduler->cluster().FindNode(node->name) >= 0 || !node_names.insert(node->name).second)
      return absl::AlreadyExistsError(
          absl::StrFormat("nodes[%d]: node %s already exists", i, node->name));
    nodes.push_back(*std::move(node));
  }
  std::vector<Queue> queues;
  for (size_t i = 0; i < queue_specs.size(); ++i) {
    auto q = QueueFromJson(queue_specs[i]);
    if (!q.ok()) return Where(absl::StrFormat("queues[%d]", i), q.status());
    queues.push_back(*std::move(q));
  }
  std::vector<Job> jobs;
  std::vector<Json> running_lists;
  std::set<std::string> job_names;
  for (size_t i = 0; i < job_specs.size(); ++i) {
    const std::string where = absl::StrFormat("jobs[%d]", i);
    Json spec = job_specs[i];
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
    for (size_t k = 0; k < running.size(); ++k)
      if (!running[k].is_string())
        return absl::InvalidArgumentError(absl::StrFormat("%s: running[%d]: expected a node name", where, k));
    if (scheduler->FindJob(job->name) != nullptr || !job_names.insert(job->name).second)
      return absl::AlreadyExistsError(absl::StrFormat("%s: job %s already exists", where, job->name));
    jobs.push_back(*std::move(job));
    running_lists.push_back(std::move(running));
  }
  // Applied in order. What only the scheduler can judge (a job naming a queue that does not
  // exist, a running task that does not fit its node) fails part-way: everything applied so far
  // is then undone in reverse, so a scenario that cannot be loaded whole changes nothing.
  std::vector<std::function<void()>> undo;
  auto fail = [&](const std::string& where, const absl::Status& s) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) (*it)();
    return Where(where, s);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    absl::Status s = scheduler->cluster().AddNode(nodes[i]);
    if (!s.ok()) return fail(absl::StrFormat("nodes[%d]", i), s);
    undo.push_back([scheduler, name = nodes[i].name] {
      scheduler->cluster().RemoveNode(name).IgnoreError();
    });
  }
  // A queue tree is checked whole (a cycle of parents is named as such), then added parents
  // first, whatever order the scenario lists its queues in.
  {
    std::map<std::string, Queue> all;
    for (const Queue& q : scheduler->Queues()) all[q.name] = q;
    for (const Queue& q : queues) all[q.name] = q;
    RETURN_IF_ERROR(Where("queues", CheckQueueTree(all, {})));
  }
  std::vector<size_t> queue_order;
  {
    std::set<std::string> placed;
    for (const Queue& q : scheduler->Queues()) placed.insert(q.name);
    std::vector<char> done(queues.size(), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < queues.size(); ++i)
        if (!done[i] && (queues[i].parent.empty() || placed.count(queues[i].parent))) {
          done[i] = 1;
          progress = true;
          placed.insert(queues[i].name);
          queue_order.push_back(i);
        }
    }
    for (size_t i = 0; i < queues.size(); ++i)
      if (!done[i]) queue_order.push_back(i);  // the scheduler names what is wrong
  }
  for (size_t i : queue_order) {
    // "default" exists from the start; a scenario may redefine it.
    const Queue& q = queues[i];
    if (q.name == "default") {
      Queue previous;
      for (const Queue& existing : scheduler->Queues())
        if (existing.name == q.name) previous = existing;
      absl::Status s = scheduler->UpdateQueue(q);
      if (!s.ok()) return fail(absl::StrFormat("queues[%d]", i), s);
      undo.push_back([scheduler, previous] { scheduler->UpdateQueue(previous).IgnoreError(); });
    } else {
      absl::Status s = scheduler->AddQueue(q);
      if (!s.ok()) return fail(absl::StrFormat("queues[%d]", i), s);
      undo.push_back([scheduler, name = q.name] { scheduler->DeleteQueue(name).IgnoreError(); });
    }
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string where = absl::StrFormat("jobs[%d]", i);
    absl::Status s = scheduler->SubmitJob(jobs[i]);
    if (!s.ok()) return fail(where, s);
    // Deleting the job also releases the tasks started below.
    undo.push_back([scheduler, name = jobs[i].name] { scheduler->DeleteJob(name).IgnoreError(); });
    const Json& running = running_lists[i];
    for (size_t k = 0; k < running.size(); ++k) {
      s = StartTask(scheduler, jobs[i].name, static_cast<int>(k), running[k].get<std::string>());
      if (!s.ok()) return fail(where, s);
    }
  }
  return absl::OkStatus();
}

}  // namespace gpufleet::engine
