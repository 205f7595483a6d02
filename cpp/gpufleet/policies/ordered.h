// Shared shape of the preemptive "order every active job, fill greedily" policies (SRTF, LAS):
// on each scheduling point the active jobs are sorted by a key and placed while they fit; running
// jobs that no longer fit are preempted. Subclasses only define the key.
#ifndef GPUFLEET_POLICIES_ORDERED_H_
#define GPUFLEET_POLICIES_ORDERED_H_

#include <algorithm>
#include <vector>

#include "gpufleet/sim/policy.h"

namespace gpufleet::sim {

class OrderedPolicy : public Policy {
 public:
  void OnArrival(int job, const SimView&) override { active_.push_back(job); }
  void OnFinish(int job, const SimView&) override {
    active_.erase(std::find(active_.begin(), active_.end(), job));
  }
  void Schedule(const SimView& view, std::vector<Assignment>* plan) override {
    keys_.resize(view.jobs->size());
    for (int i : active_) keys_[i] = Key(view, i);
    if (view.tiresias_compat) {
      // Tiresias sorts its runnable list in place with a stable sort: ties keep the last order.
      std::stable_sort(active_.begin(), active_.end(),
                       [&](int a, int b) { return keys_[a] < keys_[b]; });
    } else {
      std::sort(active_.begin(), active_.end(), [&](int a, int b) {
        if (keys_[a] != keys_[b]) return keys_[a] < keys_[b];
        const JobSpec& x = view.job(a).spec;
        const JobSpec& y = view.job(b).spec;
        return x.submit_time != y.submit_time ? x.submit_time < y.submit_time : a < b;
      });
    }
    Filler fill(view, plan);
    for (int i : active_) {
      if (fill.total_free() == 0) break;
      fill.TryPlace(i, ModelChoice::kFirstFit);
    }
    KeepModels(view, ModelChoice::kFirstFit, plan);
  }

 protected:
  virtual double Key(const SimView& view, int job) const = 0;

 private:
  std::vector<int> active_;
  std::vector<double> keys_;
};

}  // namespace gpufleet::sim

#endif  // GPUFLEET_POLICIES_ORDERED_H_
