#include "gpufleet/engine/jobtime_ledger.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace gpufleet::engine {

JobtimeLedger::JobtimeLedger() {
  view_.jobs = &jobs_;
  view_.running = &running_;
  view_.busy = &busy_;
}

void JobtimeLedger::SetPool(const jobtime::GpuPool* pool) {
  view_.pool = pool;
  SetNumModels(pool->num_models());
}

void JobtimeLedger::SetNumModels(int n) {
  if (n > static_cast<int>(busy_.size())) busy_.resize(n, 0);
}

int JobtimeLedger::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

int JobtimeLedger::Add(const std::string& name, jobtime::JobSpec spec) {
  const int i = size();
  jobtime::Job j;
  j.spec = std::move(spec);
  j.state = jobtime::JobState::kPending;
  j.wait_since = j.spec.submit_time;
  j.last_update = view_.now;
  jobs_.push_back(std::move(j));
  names_.push_back(name);
  index_[name] = i;
  return i;
}

void JobtimeLedger::Advance(jobtime::Job& j) {
  jobtime::AdvanceJob(j, view_.now, view_.pool->model(j.model).perf_factor);
}

void JobtimeLedger::AddRunning(int i, int model) {
  jobtime::Job& j = jobs_[i];
  j.running_pos = static_cast<int>(running_.size());
  running_.push_back(i);
  busy_[model] += j.spec.num_gpu;
}

// Swap-with-last removal, as the simulator does: policies that iterate the running list see the
// same order in both.
void JobtimeLedger::RemoveRunning(int i) {
  jobtime::Job& j = jobs_[i];
  const int pos = j.running_pos;
  const int last = running_.back();
  running_[pos] = last;
  jobs_[last].running_pos = pos;
  running_.pop_back();
  j.running_pos = -1;
  busy_[j.model] -= j.spec.num_gpu;
}

void JobtimeLedger::Start(int i, int model) {
  jobtime::Job& j = jobs_[i];
  const double now = view_.now;
  j.state = jobtime::JobState::kRunning;
  j.model = model;
  j.queueing_delay += now - j.wait_since;
  j.last_update = now;
  if (j.first_start < 0) j.first_start = now;
  if (j.work_done > 0 || j.preemptions > 0) j.stall_until = now;  // no restore delay here
  AddRunning(i, model);
}

void JobtimeLedger::Preempt(int i) {
  jobtime::Job& j = jobs_[i];
  Advance(j);
  RemoveRunning(i);
  j.state = jobtime::JobState::kPending;
  j.wait_since = view_.now;
  j.model = -1;
  ++j.preemptions;
}

void JobtimeLedger::Migrate(int i, int model) {
  jobtime::Job& j = jobs_[i];
  Advance(j);
  busy_[j.model] -= j.spec.num_gpu;
  busy_[model] += j.spec.num_gpu;
  j.model = model;
  j.stall_until = view_.now;
  ++j.migrations;
}

void JobtimeLedger::UndoMigration(int i) {
  --jobs_[i].migrations;
  Preempt(i);
}

void JobtimeLedger::Finish(int i) {
  jobtime::Job& j = jobs_[i];
  if (j.state == jobtime::JobState::kRunning) {
    Advance(j);
    RemoveRunning(i);
  } else if (j.state == jobtime::JobState::kPending) {
    j.queueing_delay += view_.now - j.wait_since;  // cancelled while waiting
  }
  j.end_time = view_.now;
  j.state = jobtime::JobState::kDone;
  index_.erase(names_[i]);
}

absl::Status JobtimeLedger::Validate(const std::vector<jobtime::Assignment>& plan,
                                     bool keep_unlisted) {
  planned_.resize(jobs_.size(), -1);
  absl::Status s = jobtime::CheckPlan(
      plan, jobs_, *view_.pool, busy_, keep_unlisted, [this](int i) { return names_[i]; },
      &planned_, &used_);
  if (s.ok())
    for (const jobtime::Assignment& a : plan) planned_[a.job] = -1;
  return s;
}

}  // namespace gpufleet::engine
