#include "gpufleet/sim/policy.h"

#include "gpufleet/core/status_macros.h"

namespace gpufleet::sim {

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& spec) {
  ASSIGN_OR_RETURN(auto parsed, ParseSpec(spec));
  return Registry<Policy>::Global().Create(parsed.first, parsed.second);
}

std::vector<std::string> PolicyNames() { return Registry<Policy>::Global().Names(); }

std::string PolicyDescription(const std::string& name) {
  return Registry<Policy>::Global().Description(name);
}

Filler::Filler(const SimView& view, std::vector<Assignment>* plan) : view_(view), plan_(plan) {
  const GpuPool& pool = *view.pool;
  free_.resize(pool.num_models());
  for (int m = 0; m < pool.num_models(); ++m) {
    free_[m] = pool.model(m).count;
    total_free_ += free_[m];
  }
}

bool Filler::Fits(int job, int model) const {
  const Job& j = view_.job(job);
  const GpuModel& gm = view_.pool->model(model);
  return free_[model] >= j.spec.num_gpu && j.CanRunOn(model) &&
         (gm.memory_gib <= 0 || j.spec.memory_gib <= gm.memory_gib);
}

int Filler::PickModel(int job, ModelChoice choice) const {
  const Job& j = view_.job(job);
  if (j.state == JobState::kRunning && Fits(job, j.model)) return j.model;
  int best = -1;
  for (int m = 0; m < static_cast<int>(free_.size()); ++m) {
    if (!Fits(job, m)) continue;
    if (choice == ModelChoice::kFirstFit) return m;
    if (best < 0 || j.Speed(m) > j.Speed(best)) best = m;
  }
  return best;
}

void Filler::Take(int job, int model) {
  int n = view_.job(job).spec.num_gpu;
  free_[model] -= n;
  total_free_ -= n;
  plan_->push_back({job, model});
}

void Filler::Release(int job, int model) {
  int n = view_.job(job).spec.num_gpu;
  free_[model] += n;
  total_free_ += n;
}

int Filler::TryPlace(int job, ModelChoice choice) {
  if (total_free_ < view_.job(job).spec.num_gpu) return -1;
  int m = PickModel(job, choice);
  if (m >= 0) Take(job, m);
  return m;
}

void KeepModels(const SimView& view, ModelChoice choice, std::vector<Assignment>* plan) {
  bool moved = false;
  for (const Assignment& a : *plan) {
    const Job& j = view.job(a.job);
    moved |= j.state == JobState::kRunning && j.model != a.model;
  }
  if (!moved) return;
  std::vector<Assignment> fresh;
  fresh.reserve(plan->size());
  Filler fill(view, &fresh);
  for (const Assignment& a : *plan) {
    const Job& j = view.job(a.job);
    if (j.state == JobState::kRunning) fill.Take(a.job, j.model);  // the old running set fits
  }
  for (const Assignment& a : *plan) {
    if (view.job(a.job).state == JobState::kRunning) continue;
    if (fill.TryPlace(a.job, choice) < 0) return;
  }
  plan->swap(fresh);
}

}  // namespace gpufleet::sim
