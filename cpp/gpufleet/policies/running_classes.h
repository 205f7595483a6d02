// Running jobs of a least-attained-service policy, grouped so that a scheduling point reads only
// the few it can change. A class holds the running jobs of one queue on one GPU model with one GPU
// count: their attained service grows at one rate (GPUs x the model's perf factor), so their order
// by `c` = service - now x rate holds between points and nothing is re-sorted. Jobs of different
// classes are compared by their service at the point itself.
#ifndef GPUFLEET_POLICIES_RUNNING_CLASSES_H_
#define GPUFLEET_POLICIES_RUNNING_CLASSES_H_

#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace gpufleet::jobtime {

// A running job's place in its class: service extrapolated to time 0, then submit time, index.
struct RunKey {
  double c;
  double submit;
  int job;
  bool operator<(const RunKey& o) const {
    return std::tie(c, submit, job) < std::tie(o.c, o.submit, o.job);
  }
  // The smallest key with this c (every key with a larger or equal c sorts at or after it).
  static RunKey LeastWith(double c) {
    return {c, -std::numeric_limits<double>::infinity(), std::numeric_limits<int>::min()};
  }
  // Sorts after every key.
  static RunKey Largest() {
    return {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
            std::numeric_limits<int>::max()};
  }
};

// A running job indexed by what a move to another model gains per GPU (largest first), then in
// queue order: the swap search reads one entry per distinct gain.
struct GainKey {
  double neg_gain;
  RunKey run;
  bool operator<(const GainKey& o) const {
    if (neg_gain != o.neg_gain) return neg_gain < o.neg_gain;
    return run < o.run;
  }
};

struct RunClass {
  int model = 0;
  int gpus = 0;
  double rate = 0;  // service per second of each of its jobs
  std::set<RunKey> run[2];  // [0]: high queue, [1]: low queue
  // Per target model: the high-queue jobs that could swap there (they can run on it and fit
  // its memory), by the speed they gain there.
  std::vector<std::set<GainKey>> swap_to;
  // Per queue, per model: the jobs that run strictly faster on that model than on this one.
  std::vector<std::set<RunKey>> faster_on[2];
};

// The classes, created on first use and kept for the run (a few per (model, GPU count)).
class RunClasses {
 public:
  void Reset(int num_models) {
    num_models_ = num_models;
    classes_.clear();
    index_.clear();
  }
  int Find(int model, int gpus, double rate) {
    auto [it, added] = index_.try_emplace({model, gpus}, static_cast<int>(classes_.size()));
    if (added) {
      RunClass c;
      c.model = model;
      c.gpus = gpus;
      c.rate = rate;
      c.swap_to.resize(num_models_);
      c.faster_on[0].resize(num_models_);
      c.faster_on[1].resize(num_models_);
      classes_.push_back(std::move(c));
    }
    return it->second;
  }
  RunClass& operator[](int k) { return classes_[k]; }
  std::vector<RunClass>& all() { return classes_; }
  const std::vector<RunClass>& all() const { return classes_; }

 private:
  int num_models_ = 0;
  std::vector<RunClass> classes_;
  std::map<std::pair<int, int>, int> index_;
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_RUNNING_CLASSES_H_
