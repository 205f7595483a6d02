// The straightforward hetero-las (policies/hetero_las.cc before its incremental rewrite): every
// scheduling point recomputes the running mean, scans every job for promotions, sorts all active
// jobs and builds a full plan. Kept only as the reference the incremental policy is compared with
// (sim_reference_test.cc); not registered.
#ifndef GPUFLEET_TESTS_CPP_REFERENCE_HETERO_LAS_REFERENCE_H_
#define GPUFLEET_TESTS_CPP_REFERENCE_HETERO_LAS_REFERENCE_H_

#include <algorithm>
#include <tuple>
#include <vector>

#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime::reference {

class HeteroLasReference : public JobTimePolicy {
 public:
  HeteroLasReference(double priority_ratio, double starve_ratio, bool swap, bool aware, bool upgrade)
      : priority_ratio_(priority_ratio), starve_ratio_(starve_ratio), swap_(swap && aware),
        aware_(aware), upgrade_(upgrade && aware) {}

  absl::Status Init(const JobTimeView& view) override {
    size_t n = view.jobs->size();
    low_.assign(n, false);
    service_offset_.assign(n, 0);
    time_offset_.assign(n, 0);
    return absl::OkStatus();
  }
  void OnArrival(int job, const JobTimeView& view) override {
    if (job >= static_cast<int>(low_.size())) {  // the engine's ledger grows with arrivals
      size_t n = view.jobs->size();
      low_.resize(n, false);
      service_offset_.resize(n, 0);
      time_offset_.resize(n, 0);
    }
    active_.push_back(job);
  }
  void OnFinish(int job, const JobTimeView&) override {
    active_.erase(std::find(active_.begin(), active_.end(), job));
  }

  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    // 1. Demote running jobs far above the running mean.
    double mean = 0;
    for (int i : *view.running) mean += Service(view, i);
    if (!view.running->empty()) mean /= view.running->size();
    std::vector<bool>& stopped = stopped_;
    stopped.assign(view.jobs->size(), false);
    for (int i : *view.running) {
      if (!low_[i] && Service(view, i) > mean * priority_ratio_ && mean > 0) {
        low_[i] = true;
        stopped[i] = true;
      }
    }
    // 2. Promote starving Q2 jobs with their history forgotten.
    for (int i : active_) {
      const Job& j = view.job(i);
      if (!low_[i] || j.state != JobState::kPending) continue;
      double ran = view.RunTime(i) - time_offset_[i];
      if (ran <= 0 || (view.now - j.wait_since) / ran > starve_ratio_) {
        low_[i] = false;
        service_offset_[i] = aware_ ? view.Service(i) : view.GpuTime(i);
        time_offset_[i] = view.RunTime(i);
      }
    }
    // Order: Q1 by (service, submit); Q2 with running jobs first, then by (service, submit).
    auto key = [&](int i) {
      const Job& j = view.job(i);
      bool waits = !(j.state == JobState::kRunning && !stopped[i]);
      return std::make_tuple(low_[i], low_[i] && waits, Service(view, i), j.spec.submit_time, i);
    };
    std::sort(active_.begin(), active_.end(), [&](int a, int b) { return key(a) < key(b); });

    Filler fill(view, plan);
    // Running Q1 jobs keep their GPUs (only demotion stops them).
    for (int i : active_)
      if (!low_[i] && view.job(i).state == JobState::kRunning) fill.Take(i, view.job(i).model);
    for (int i : active_) {
      const Job& j = view.job(i);
      if (!low_[i] && j.state == JobState::kRunning) continue;
      if (fill.total_free() == 0) break;
      int k = fill.TryPlace(i, aware_ ? ModelChoice::kFastest : ModelChoice::kAgnostic);
      if (k >= 0 && !low_[i] && swap_ && j.state == JobState::kPending)
        TrySwap(view, fill, plan, plan->size() - 1);
    }
    if (!aware_) KeepModels(view, ModelChoice::kAgnostic, plan);
    if (upgrade_) Upgrade(view, fill, plan);
  }

 private:
  // Aware: GPU-seconds x the model's perf factor; agnostic: plain GPU-seconds.
  double Service(const JobTimeView& view, int i) const {
    return (aware_ ? view.Service(i) : view.GpuTime(i)) - service_offset_[i];
  }

  void Upgrade(const JobTimeView& view, Filler& fill, std::vector<Assignment>* plan) {
    const size_t n = plan->size();
    for (size_t p = 0; p < n && fill.total_free() > 0; ++p) {
      const int i = (*plan)[p].job;
      const int from = (*plan)[p].model;
      const Job& j = view.job(i);
      const double left = view.RemainingWork(i);
      double best_time = left / j.Speed(from);
      int best = -1;
      for (int m = 0; m < view.pool->num_models(); ++m) {
        if (m == from || !fill.Fits(i, m)) continue;
        double t = left / j.Speed(m) + (j.state == JobState::kRunning ? view.restore_delay : 0);
        if (t < best_time) {
          best_time = t;
          best = m;
        }
      }
      if (best < 0) continue;
      fill.Release(i, from);
      fill.Take(i, best);  // appends an entry: fold it back into position p
      plan->pop_back();
      (*plan)[p].model = best;
    }
  }

  // plan[s_pos] is the new job s on model k; looks for the best running job i to trade models.
  void TrySwap(const JobTimeView& view, Filler& fill, std::vector<Assignment>* plan, size_t s_pos) {
    const int s = (*plan)[s_pos].job;
    const int k = (*plan)[s_pos].model;
    const Job& js = view.job(s);
    const int ns = js.spec.num_gpu;
    double best_gain = 1e-12;
    size_t best = plan->size();
    for (size_t p = 0; p < s_pos; ++p) {
      const int i = (*plan)[p].job;
      const int j = (*plan)[p].model;
      const Job& ji = view.job(i);
      const int ni = ji.spec.num_gpu;
      if (j == k || ji.state != JobState::kRunning || ni > ns) continue;
      if (fill.free(j) + ni < ns || !ji.CanRunOn(k) || !js.CanRunOn(j)) continue;
      const GpuModel& mj = view.pool->model(j);
      const GpuModel& mk = view.pool->model(k);
      if ((mj.memory_gib > 0 && js.spec.memory_gib > mj.memory_gib) ||
          (mk.memory_gib > 0 && ji.spec.memory_gib > mk.memory_gib))
        continue;
      double gain = ni * (ji.Speed(k) - ji.Speed(j)) + ns * (js.Speed(j) - js.Speed(k));
      if (gain > best_gain) {
        best_gain = gain;
        best = p;
      }
    }
    if (best == plan->size()) return;
    const int i = (*plan)[best].job;
    const int j = (*plan)[best].model;
    // Rebuild the two entries through the filler so its free counts stay right.
    Assignment ai = (*plan)[best];
    plan->erase(plan->begin() + s_pos);
    plan->erase(plan->begin() + best);
    fill.Release(ai.job, j);
    fill.Release(s, k);
    fill.Take(i, k);
    fill.Take(s, j);
  }

  double priority_ratio_, starve_ratio_;
  bool swap_, aware_, upgrade_;
  std::vector<int> active_;
  std::vector<bool> low_, stopped_;
  std::vector<double> service_offset_, time_offset_;
};

}  // namespace gpufleet::jobtime::reference

#endif  // GPUFLEET_TESTS_CPP_REFERENCE_HETERO_LAS_REFERENCE_H_
