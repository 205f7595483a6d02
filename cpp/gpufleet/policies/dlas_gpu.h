// Discretized two-dimensional LAS (Tiresias, Gu et al., NSDI 2019, section 3.2 and its simulator's
// "dlas-gpu"): K queues split by attained service (GPUs x executed time) at `queue_limits`; a job
// enters queue 0 and moves down one queue when its service reaches the queue's limit; queues are
// served in order, each in FIFO order with running jobs kept ahead of pending ones. With
// starvation_ratio > 0, a job that has waited starvation_ratio x its executed time returns to
// queue 0 with its executed time reset (Tiresias' STARVELIMIT promotion). Subclasses may order a
// queue differently (gittins.cc).
#ifndef GPUFLEET_POLICIES_DLAS_GPU_H_
#define GPUFLEET_POLICIES_DLAS_GPU_H_

#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/sim/policy.h"

namespace gpufleet::sim {

class DlasGpu : public Policy {
 public:
  struct Options {
    std::vector<double> queue_limits = {3250, 7200, 18000};
    double starvation_ratio = 0;  // 0 = off (Tiresias' default runs)
    bool gputime = true;          // false: service = time only (Tiresias' "dlas")
  };
  static absl::StatusOr<Options> ParseOptions(const Json& p, const std::string& owner,
                                              std::vector<std::string> extra_keys = {});
  explicit DlasGpu(Options o) : o_(std::move(o)), queues_(o_.queue_limits.size() + 1) {}

  absl::Status Init(const SimView& view) override;
  void OnArrival(int job, const SimView& view) override;
  void OnFinish(int job, const SimView& view) override;
  void Schedule(const SimView& view, std::vector<Assignment>* plan) override;
  double NextWakeup(const SimView& view) const override;

 protected:
  // Hook to reorder a queue before it is served (the default keeps Tiresias' FIFO order).
  virtual void OrderQueue(const SimView& view, int q, std::vector<int>& queue) {}
  double Service(const SimView& view, int job) const;  // since the last promotion
  const Options& options() const { return o_; }
  int queue_of(int job) const { return queue_of_[job]; }

 private:
  void Move(int job, int to);
  Options o_;
  std::vector<std::vector<int>> queues_;
  std::vector<int> queue_of_;
  std::vector<double> time_offset_;  // run_time at the last promotion
};

}  // namespace gpufleet::sim

#endif  // GPUFLEET_POLICIES_DLAS_GPU_H_
