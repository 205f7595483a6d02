// Least attained service: preemptive; the job that has received the least service so far runs
// first (Rai, Urvoy-Keller and Biersack, "Analysis of LAS scheduling for job size distributions
// with high variance", SIGMETRICS 2003). Service is GPUs x time by default, the two-dimensional
// form Tiresias uses (Gu et al., NSDI 2019); service="time" counts time only. Continuous LAS, so
// priorities are compared on scheduling points (events or the simulator's tick).
#include <string>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/ordered.h"

namespace gpufleet::jobtime {
namespace {

class Las : public OrderedPolicy {
 public:
  explicit Las(bool gputime) : gputime_(gputime) {}

 protected:
  double Key(const JobTimeView& view, int i) const override {
    return gputime_ ? view.GpuTime(i) : view.RunTime(i);
  }

 private:
  bool gputime_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "las",
     .description = "least attained service, preemptive",
     .params = {{"service", ParamType::kString, "gpu_time",
                 "attained service in \"gpu_time\" (GPU-seconds) or \"time\" (seconds)"}},
     .capabilities = {"preemptive"}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(std::string s, p.Get<std::string>("service"));
      if (s != "gpu_time" && s != "time")
        return absl::InvalidArgumentError("las: service must be \"gpu_time\" or \"time\", got \"" +
                                          s + "\"");
      return std::unique_ptr<JobTimePolicy>(new Las(s == "gpu_time"));
    });

}  // namespace
}  // namespace gpufleet::jobtime
