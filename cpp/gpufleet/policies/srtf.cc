// Shortest remaining time first with oracle durations: preemptive; the job with the least
// remaining work (reference seconds) runs first. The "shortest" scheduler of Tiresias' simulator
// (Gu et al., NSDI 2019), after Schrage, "A proof of the optimality of the shortest remaining
// processing time discipline", Operations Research 16(3), 1968.
#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/ordered.h"

namespace gpufleet::jobtime {
namespace {

class Srtf : public OrderedPolicy {
 public:
  explicit Srtf(bool gputime) : gputime_(gputime) {}

 protected:
  double Key(const JobTimeView& view, int i) const override {
    return view.RemainingWork(i) * (gputime_ ? view.job(i).spec.num_gpu : 1);
  }

 private:
  bool gputime_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "srtf",
     .description = "shortest remaining time first, oracle durations, preemptive",
     .params = {{"gputime", ParamType::kBool, false, "weigh remaining time by GPUs"}},
     .traits = {.needs_durations = true, .preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(bool g, p.Get<bool>("gputime"));
      return std::unique_ptr<JobTimePolicy>(new Srtf(g));
    });

}  // namespace
}  // namespace gpufleet::jobtime
