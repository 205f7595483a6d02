#include "gpufleet/engine/jobtime_ledger.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace gpufleet::engine {

JobtimeLedger::JobtimeLedger() {
  view_.jobs = &jobs_;
  view_.running = &running_;
  view_.busy = &busy_;
}

void JobtimeLedger::SetPool(const sim::GpuPool* pool) {
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

int JobtimeLedger::Add(const std::string& name, sim::JobSpec spec) {
  const int i = size();
  sim::Job j;
  j.spec = std::move(spec);
  j.state = sim::JobState::kPending;
  j.wait_since = j.spec.submit_time;
  j.last_update = view_.now;
  jobs_.push_back(std::move(j));
  names_.push_back(name);
  index_[name] = i;
  return i;
}

// The simulator's AdvanceJob: counters of a running job brought up to now.
void JobtimeLedger::Advance(sim::Job& j) {
  const double t = view_.now;
  const double elapsed = t - j.last_update;
  if (elapsed <= 0) return;
  const double progress_from = std::max(j.last_update, j.stall_until);
  if (t > progress_from) j.work_done += (t - progress_from) * j.Speed(j.model);
  j.work_done = std::min(j.work_done, j.spec.duration);
  j.run_time += elapsed;
  j.gpu_time += elapsed * j.spec.num_gpu;
  j.service += elapsed * j.spec.num_gpu * view_.pool->model(j.model).perf_factor;
  j.last_update = t;
}

void JobtimeLedger::AddRunning(int i, int model) {
  sim::Job& j = jobs_[i];
  j.running_pos = static_cast<int>(running_.size());
  running_.push_back(i);
  busy_[model] += j.spec.num_gpu;
}

// Swap-with-last removal, as the simulator does: policies that iterate the running list see the
// same order in both.
void JobtimeLedger::RemoveRunning(int i) {
  sim::Job& j = jobs_[i];
  const int pos = j.running_pos;
  const int last = running_.back();
  running_[pos] = last;
  jobs_[last].running_pos = pos;
  running_.pop_back();
  j.running_pos = -1;
  busy_[j.model] -= j.spec.num_gpu;
}

void JobtimeLedger::Start(int i, int model) {
  sim::Job& j = jobs_[i];
  const double now = view_.now;
  j.state = sim::JobState::kRunning;
  j.model = model;
  j.queueing_delay += now - j.wait_since;
  j.last_update = now;
  if (j.first_start < 0) j.first_start = now;
  if (j.work_done > 0 || j.preemptions > 0) j.stall_until = now;  // no restore delay here
  AddRunning(i, model);
}

void JobtimeLedger::Preempt(int i) {
  sim::Job& j = jobs_[i];
  Advance(j);
  RemoveRunning(i);
  j.state = sim::JobState::kPending;
  j.wait_since = view_.now;
  j.model = -1;
  ++j.preemptions;
}

void JobtimeLedger::Migrate(int i, int model) {
  sim::Job& j = jobs_[i];
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
  sim::Job& j = jobs_[i];
  if (j.state == sim::JobState::kRunning) {
    Advance(j);
    RemoveRunning(i);
  } else if (j.state == sim::JobState::kPending) {
    j.queueing_delay += view_.now - j.wait_since;  // cancelled while waiting
  }
  j.end_time = view_.now;
  j.state = sim::JobState::kDone;
  index_.erase(names_[i]);
}

absl::Status JobtimeLedger::Validate(const std::vector<sim::Assignment>& plan,
                                     bool keep_unlisted) const {
  const sim::GpuPool& pool = *view_.pool;
  std::vector<int> used = keep_unlisted ? busy_ : std::vector<int>(pool.num_models(), 0);
  used.resize(pool.num_models(), 0);
  absl::flat_hash_set<int> seen;
  for (const sim::Assignment& a : plan) {
    if (a.job < 0 || a.job >= size() || a.model < 0 || a.model >= pool.num_models())
      return absl::InternalError(
          absl::StrFormat("policy returned an out-of-range assignment (job %d, model %d)", a.job,
                          a.model));
    const sim::Job& j = jobs_[a.job];
    if (j.state != sim::JobState::kPending && j.state != sim::JobState::kRunning)
      return absl::InternalError(
          absl::StrFormat("policy assigned job %s, which is not active", names_[a.job]));
    if (!seen.insert(a.job).second || !j.CanRunOn(a.model))
      return absl::InternalError(absl::StrFormat(
          "policy assigned job %s twice or to a model it cannot run on (%s)", names_[a.job],
          pool.model(a.model).name));
    if (keep_unlisted && j.state == sim::JobState::kRunning) used[j.model] -= j.spec.num_gpu;
    used[a.model] += j.spec.num_gpu;
  }
  for (int m = 0; m < pool.num_models(); ++m)
    if (used[m] > pool.model(m).count)
      return absl::InternalError(absl::StrFormat(
          "policy over-committed model %s (%d of %d GPUs)", pool.model(m).name, used[m],
          pool.model(m).count));
  return absl::OkStatus();
}

}  // namespace gpufleet::engine
