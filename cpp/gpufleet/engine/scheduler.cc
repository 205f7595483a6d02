#include "gpufleet/engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/queue_tree_specs.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::engine {

Scheduler::Scheduler() {
  const auto start = std::chrono::steady_clock::now();
  clock_ = [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  absl::Status s = Configure(DefaultConfigJson());
  (void)s;  // the default configuration names built-in actions and plugins only
  queues_["default"] = Queue{"default", 1.0, Resources::Unlimited(), true};
}

absl::Status Scheduler::Configure(const Json& json) {
  ASSIGN_OR_RETURN(Config config, ConfigFromJson(json));
  std::vector<std::unique_ptr<Action>> actions;
  bool admits = false;
  for (const NamedArgs& a : config.actions) {
    ASSIGN_OR_RETURN(std::unique_ptr<Action> action, MakeAction(a.name, a.args));
    admits |= action->traits().admits_jobs;
    actions.push_back(std::move(action));
  }
  needs_ = NeedsOf(config);
  config_ = std::move(config);
  actions_ = std::move(actions);
  admits_jobs_ = admits;
  return absl::OkStatus();
}

absl::Status Scheduler::AddQueue(const Queue& q) {
  if (q.name.empty()) return absl::InvalidArgumentError("queue: name is missing");
  if (queues_.count(q.name))
    return absl::AlreadyExistsError(absl::StrFormat("queue %s already exists", q.name));
  if (!(q.weight >= 0))
    return absl::InvalidArgumentError(absl::StrFormat("queue %s: weight must be >= 0", q.name));
  RETURN_IF_ERROR(CheckQueueChange(q));
  queues_[q.name] = q;
  return absl::OkStatus();
}

absl::Status Scheduler::CheckQueueChange(const Queue& q) const {
  if (q.parent.empty() && q.quota.empty() && queues_.count(q.name) == 0 &&
      std::all_of(queues_.begin(), queues_.end(),
                  [](const auto& kv) { return kv.second.parent.empty(); }))
    return CheckQueueTree({{q.name, q}}, {});  // flat queues: only its own numbers matter
  std::map<std::string, Queue> candidate = queues_;
  candidate[q.name] = q;
  return CheckQueueTree(candidate, jobs_);
}

absl::Status Scheduler::UpdateQueue(const Queue& q) {
  auto it = queues_.find(q.name);
  if (it == queues_.end())
    return absl::NotFoundError(absl::StrFormat("queue %s does not exist", q.name));
  if (!(q.weight >= 0))
    return absl::InvalidArgumentError(absl::StrFormat("queue %s: weight must be >= 0", q.name));
  RETURN_IF_ERROR(CheckQueueChange(q));
  it->second = q;
  return absl::OkStatus();
}

absl::Status Scheduler::DeleteQueue(const std::string& name) {
  if (!queues_.count(name))
    return absl::NotFoundError(absl::StrFormat("queue %s does not exist", name));
  for (const auto& [job_name, job] : jobs_)
    if (job.queue == name)
      return absl::FailedPreconditionError(
          absl::StrFormat("queue %s still has job %s; delete or move its jobs first", name, job_name));
  for (const auto& [child, q] : queues_)
    if (q.parent == name)
      return absl::FailedPreconditionError(absl::StrFormat(
          "queue %s still has child queue %s; delete or move its children first", name, child));
  queues_.erase(name);
  return absl::OkStatus();
}

std::vector<Queue> Scheduler::Queues() const {
  std::vector<Queue> out;
  for (const auto& [name, q] : queues_) out.push_back(q);
  return out;
}

absl::Status Scheduler::CheckTasks(const Job& job, const Job* replacing) const {
  const std::string owner = "job " + job.name;
  if (!queues_.count(job.queue))
    return absl::NotFoundError(absl::StrFormat("%s: queue %s does not exist", owner, job.queue));
  for (const auto& [child, q] : queues_)
    if (q.parent == job.queue)
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: queue %s has child queues (%s); jobs go to queues without children", owner,
          job.queue, child));
  if (job.min_available < 0)
    return absl::InvalidArgumentError(owner + ": min_available must be >= 0");
  std::set<std::string> names;
  for (const Pod& p : job.tasks) {
    if (p.name.empty()) return absl::InvalidArgumentError(owner + ": a task has no name");
    if (!names.insert(p.name).second)
      return absl::InvalidArgumentError(absl::StrFormat("%s: task %s appears twice", owner, p.name));
    auto it = task_owner_.find(p.name);
    if (it != task_owner_.end() && (replacing == nullptr || it->second != replacing->name))
      return absl::AlreadyExistsError(
          absl::StrFormat("%s: task %s already belongs to job %s", owner, p.name, it->second));
    if (it == task_owner_.end() && state_.FindAllocation(p.name) != nullptr)
      return absl::AlreadyExistsError(absl::StrFormat(
          "%s: task %s names a pod the cluster already runs outside any job", owner, p.name));
  }
  return absl::OkStatus();
}

absl::Status Scheduler::SubmitJob(const Job& job) {
  if (job.name.empty()) return absl::InvalidArgumentError("job: name is missing");
  if (jobs_.count(job.name))
    return absl::AlreadyExistsError(absl::StrFormat("job %s already exists", job.name));
  RETURN_IF_ERROR(CheckTasks(job, nullptr));
  if (job.creation < 0)
    return absl::InvalidArgumentError(absl::StrFormat("job %s: creation must be >= 0", job.name));
  jobs_[job.name] = job;
  // Without an explicit creation time, jobs are ordered by submission.
  if (job.creation == 0) jobs_[job.name].creation = last_creation_ + 1;
  last_creation_ = std::max(last_creation_, jobs_[job.name].creation);
  for (const Pod& p : job.tasks) task_owner_[p.name] = job.name;
  waiting_[job.name] = 0;
  return absl::OkStatus();
}

absl::Status Scheduler::UpdateJob(const Job& job) {
  auto it = jobs_.find(job.name);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrFormat("job %s does not exist", job.name));
  Job& old = it->second;
  RETURN_IF_ERROR(CheckTasks(job, &old));
  const int64_t creation = job.creation == 0 ? old.creation : job.creation;
  bool running = false;
  for (const Pod& p : old.tasks) running |= state_.FindAllocation(p.name) != nullptr;
  if (running && (job.queue != old.queue || job.tasks != old.tasks))
    return absl::FailedPreconditionError(absl::StrFormat(
        "job %s has running tasks: only priority and min_available may change", job.name));
  for (const Pod& p : old.tasks) task_owner_.erase(p.name);
  for (const Pod& p : job.tasks) task_owner_[p.name] = job.name;
  old = job;
  old.creation = creation;
  return absl::OkStatus();
}

absl::Status Scheduler::DeleteJob(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrFormat("job %s does not exist", name));
  for (const Pod& p : it->second.tasks) {
    if (state_.FindAllocation(p.name) != nullptr) RETURN_IF_ERROR(state_.Release(p.name));
    dra_.Forget(p.name);
    task_owner_.erase(p.name);
  }
  jobs_.erase(it);
  waiting_.erase(name);
  admitted_.erase(name);
  return absl::OkStatus();
}

const Job* Scheduler::FindJob(const std::string& name) const {
  auto it = jobs_.find(name);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<JobState> Scheduler::Jobs() const {
  std::vector<JobState> out;
  for (const auto& [name, j] : jobs_) {
    JobState s{name, j.queue, j.priority, j.min_available, static_cast<int>(j.tasks.size())};
    for (const Pod& p : j.tasks) s.running += state_.FindAllocation(p.name) != nullptr;
    s.admitted = admitted_.count(name) > 0;
    s.waiting_cycles = waiting_.count(name) ? waiting_.at(name) : 0;
    out.push_back(s);
  }
  return out;
}

absl::StatusOr<CycleResult> Scheduler::RunCycle() { return RunCycleAt(clock_()); }

absl::StatusOr<CycleResult> Scheduler::RunCycleAt(double now) {
  if (!std::isfinite(now) || now < last_now_)
    return absl::InvalidArgumentError(absl::StrFormat(
        "cycle time %g s is before the last cycle's %g s (time must not go backwards)", now,
        last_now_));
  SessionInput in;
  in.state = &state_;
  in.now = now;
  for (const auto& [name, q] : queues_) in.queues.push_back(&q);
  for (const auto& [name, j] : jobs_) {
    in.jobs.push_back(&j);
    in.waiting_cycles.push_back(waiting_[name]);
    in.inqueue.push_back(admitted_.count(name) > 0);
  }
  in.tiers = config_.TierNames();
  in.disabled = config_.DisabledPoints();
  in.hold_plan = hold_plan_;
  in.queue_memory = &queue_memory_;
  in.dra = &dra_;
  Session session(in);
  session.set_cycle(cycle_);
  std::vector<std::unique_ptr<Plugin>> plugins;
  for (const auto& tier : config_.tiers)
    for (const NamedArgs& p : tier) {
      ASSIGN_OR_RETURN(std::unique_ptr<Plugin> plugin, MakePlugin(p.name, p.args));
      plugins.push_back(std::move(plugin));
    }
  for (auto& p : plugins) p->OnSessionOpen(session);
  // What the plugins registered this time (a Python plugin's class may have been replaced since
  // the configuration was checked).
  RETURN_IF_ERROR(CheckNeedsAnswered(needs_, session.Answered()));
  session.PrepareJobs(!admits_jobs_);
  for (auto& p : plugins) p->OnSessionReady(session);
  for (auto& a : actions_) a->Execute(session);
  for (auto& p : plugins) p->OnSessionClose(session);
  CycleResult result = session.Close();

  // Adopt the session's accounting only if it is sound: no device over-committed, and no job
  // whose tasks changed left running without being ready (a partial gang, when gang is on).
  RETURN_IF_ERROR(session.state().CheckInvariants());
  for (const JobInfo& j : session.jobs())
    if (j.occupied != j.occupied_at_open && j.occupied > 0 && !session.JobReady(j))
      return absl::InternalError(absl::StrFormat(
          "cycle %d would leave job %s partly running (%d of min_available %d); nothing applied",
          cycle_, j.name(), j.occupied, j.min_available()));
  state_ = std::move(session.state());
  hold_plan_ = session.reservations().plan();
  queue_memory_ = std::move(session.queue_memory());
  if (!dra_.empty()) dra_ = std::move(session.dra());
  for (const JobInfo& j : session.jobs()) {
    if (j.inqueue) admitted_.insert(j.name());
    int& w = waiting_[j.name()];
    w = (j.valid && j.occupied < j.min_available()) ? w + 1 : 0;
  }
  ++cycle_;
  last_now_ = now;
  return result;
}

}  // namespace gpufleet::engine
