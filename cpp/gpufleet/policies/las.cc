// Least attained service: preemptive; the job that has received the least service so far runs
// first (Rai, Urvoy-Keller and Biersack, "Analysis of LAS scheduling for job size distributions
// with high variance", SIGMETRICS 2003). Service is GPUs x time by default, the two-dimensional
// form Tiresias uses (Gu et al., NSDI 2019); service="time" counts time only. Continuous LAS, so
// priorities are compared on scheduling points (events or the simulator's tick).
#include <string>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/ordered.h"

namespace gpufleet::sim {
namespace {

class Las : public OrderedPolicy {
 public:
  explicit Las(bool gputime) : gputime_(gputime) {}

 protected:
  double Key(const SimView& view, int i) const override {
    const Job& j = view.job(i);
    return gputime_ ? j.gpu_time : j.run_time;
  }

 private:
  bool gputime_;
};

GPUFLEET_REGISTER(Policy, "las",
                  "least attained service (GPU-seconds, or time with service=\"time\"), preemptive",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<Policy>> {
                    RETURN_IF_ERROR(CheckKnownParams(p, "las", {"service"}));
                    ASSIGN_OR_RETURN(std::string s,
                                     Param<std::string>(p, "las", "service", "gpu_time"));
                    if (s != "gpu_time" && s != "time")
                      return absl::InvalidArgumentError(
                          "las: service must be \"gpu_time\" or \"time\", got \"" + s + "\"");
                    return std::unique_ptr<Policy>(new Las(s == "gpu_time"));
                  });

}  // namespace
}  // namespace gpufleet::sim
