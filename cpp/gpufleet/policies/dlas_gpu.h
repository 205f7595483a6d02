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
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {

class DlasGpu : public JobTimePolicy {
 public:
  struct Options {
    std::vector<double> queue_limits = {3250, 7200, 18000};
    double starvation_ratio = 0;  // 0 = off (Tiresias' default runs)
    bool gputime = true;          // false: service = time only (Tiresias' "dlas")
  };
  // The declared parameters behind Options (queue_limits, starvation_ratio, service), shared by
  // the policies built on 2D-LAS queues, and the reader of their values.
  static std::vector<ParamSpec> OptionParams();
  static absl::StatusOr<Options> ParseOptions(const Params& p);
  explicit DlasGpu(Options o) : o_(std::move(o)), queues_(o_.queue_limits.size() + 1) {}

  absl::Status Init(const JobTimeView& view) override;
  void OnArrival(int job, const JobTimeView& view) override;
  void OnFinish(int job, const JobTimeView& view) override;
  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override;
  double NextWakeup(const JobTimeView& view) const override;

 protected:
  // Hook to reorder a queue before it is served (the default keeps Tiresias' FIFO order).
  virtual void OrderQueue(const JobTimeView& view, int q, std::vector<int>& queue) {}
  double Service(const JobTimeView& view, int job) const;  // since the last promotion
  const Options& options() const { return o_; }
  int queue_of(int job) const { return queue_of_[job]; }

 private:
  void Move(int job, int to);
  Options o_;
  std::vector<std::vector<int>> queues_;
  std::vector<int> queue_of_;
  std::vector<double> time_offset_;  // run_time at the last promotion
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_DLAS_GPU_H_
