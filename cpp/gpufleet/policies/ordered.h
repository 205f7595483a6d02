// Shared shape of the preemptive "order every active job, fill greedily" policies (SRTF, LAS):
// on each scheduling point the active jobs are sorted by a key and placed while they fit; running
// jobs that no longer fit are preempted. Subclasses only define the key.
#ifndef GPUFLEET_POLICIES_ORDERED_H_
#define GPUFLEET_POLICIES_ORDERED_H_

#include <algorithm>
#include <vector>

#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {

class OrderedPolicy : public JobTimePolicy {
 public:
  absl::Status Init(const JobTimeView& view) override {
    pos_.assign(view.jobs->size(), -1);
    keys_.assign(view.jobs->size(), 0);
    submit_.resize(view.jobs->size());
    for (size_t i = 0; i < view.jobs->size(); ++i) submit_[i] = view.job(i).spec.submit_time;
    return absl::OkStatus();
  }
  void OnArrival(int job, const JobTimeView& view) override {
    // The engine's ledger grows as jobs arrive (the simulator sizes everything in Init).
    if (job >= static_cast<int>(pos_.size())) {
      pos_.resize(view.jobs->size(), -1);
      keys_.resize(view.jobs->size(), 0);
      submit_.resize(view.jobs->size(), 0);
    }
    submit_[job] = view.job(job).spec.submit_time;
    keys_[job] = Key(view, job);
    pos_[job] = static_cast<int>(active_.size());
    active_.push_back(job);
    waiting_.push_back(job);
    demand_ += view.job(job).spec.num_gpu;
  }
  void OnFinish(int job, const JobTimeView& view) override {
    demand_ -= view.job(job).spec.num_gpu;
    int p = pos_[job];
    if (view.tiresias_compat) {
      // Tiresias' list order matters for its ties: keep it.
      active_.erase(active_.begin() + p);
      for (size_t k = p; k < active_.size(); ++k) pos_[active_[k]] = static_cast<int>(k);
    } else {
      active_[p] = active_.back();
      pos_[active_[p]] = p;
      active_.pop_back();
    }
    pos_[job] = -1;
  }
  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    // Fast path: when every active job fits at once, the order cannot matter; start the waiting
    // ones on the GPUs left free and keep the rest (O(waiting) instead of a sort of all jobs).
    if (demand_ <= view.pool->total_gpus() && !view.tiresias_compat) {
      // waiting_ also holds the jobs the last plan started: drop those that run now (a plan the
      // engine could not place keeps its jobs here, pending, for another try).
      size_t kept = 0;
      for (int i : waiting_)
        if (view.job(i).state == JobState::kPending) waiting_[kept++] = i;
      waiting_.resize(kept);
      Filler fill(view, plan, /*from_current=*/true);
      bool all = true;
      for (int i : waiting_)
        if (fill.TryPlace(i, ModelChoice::kAgnostic) < 0) {
          all = false;
          break;
        }
      if (all) {
        KeepUnlistedRunning();
        return;
      }
      plan->clear();
    }
    // Only running jobs' keys move (waiting jobs keep the key they had when they stopped).
    for (int i : *view.running) keys_[i] = Key(view, i);
    if (view.tiresias_compat) {
      // Tiresias sorts its runnable list in place with a stable sort: ties keep the last order.
      std::stable_sort(active_.begin(), active_.end(),
                       [&](int a, int b) { return keys_[a] < keys_[b]; });
    } else {
      auto less = [&](int a, int b) {
        if (keys_[a] != keys_[b]) return keys_[a] < keys_[b];
        return submit_[a] != submit_[b] ? submit_[a] < submit_[b] : a < b;
      };
      // The list is still sorted from the last point but for the running jobs' small key
      // increases and a few arrivals: insertion sort is O(n + moves) on it. Too many moves (a long
      // gap between points) fall back to a full sort.
      const size_t n = active_.size();
      size_t moves = 0;
      const size_t budget = 8 * n + 64;
      bool sorted = true;
      for (size_t k = 1; k < n && sorted; ++k) {
        int x = active_[k];
        size_t m = k;
        while (m > 0 && less(x, active_[m - 1])) {
          active_[m] = active_[m - 1];
          --m;
          if (++moves > budget) {
            sorted = false;
            break;
          }
        }
        active_[m] = x;
      }
      if (!sorted) std::sort(active_.begin(), active_.end(), less);
    }
    for (size_t k = 0; k < active_.size(); ++k) pos_[active_[k]] = static_cast<int>(k);
    Filler fill(view, plan);
    waiting_.clear();
    for (int i : active_) {
      bool placed = fill.total_free() > 0 && fill.TryPlace(i, ModelChoice::kAgnostic) >= 0;
      if (!placed || view.job(i).state == JobState::kPending) waiting_.push_back(i);
    }
    KeepModels(view, ModelChoice::kAgnostic, plan);
  }

 protected:
  virtual double Key(const JobTimeView& view, int job) const = 0;

 private:
  std::vector<int> active_;
  std::vector<int> waiting_;  // jobs that may be pending on the next point, in active_ order
  std::vector<int> pos_;  // index in active_
  std::vector<double> keys_, submit_;  // per job: last key, submit time (compact for sorting)
  int64_t demand_ = 0;    // GPUs asked by the active jobs
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_ORDERED_H_
