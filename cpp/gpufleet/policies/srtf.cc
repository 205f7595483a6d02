// Shortest remaining time first with oracle durations: preemptive; the job with the least
// remaining work (reference seconds) runs first. The "shortest" scheduler of Tiresias' simulator
// (Gu et al., NSDI 2019), after Schrage, "A proof of the optimality of the shortest remaining
// processing time discipline", Operations Research 16(3), 1968.
#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/ordered.h"

namespace gpufleet::sim {
namespace {

class Srtf : public OrderedPolicy {
 public:
  explicit Srtf(bool gputime) : gputime_(gputime) {}

 protected:
  double Key(const SimView& view, int i) const override {
    const Job& j = view.job(i);
    return j.RemainingWork() * (gputime_ ? j.spec.num_gpu : 1);
  }

 private:
  bool gputime_;
};

GPUFLEET_REGISTER(Policy, "srtf",
                  "shortest remaining time first, oracle durations, preemptive (gputime=true "
                  "weighs by GPUs)",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<Policy>> {
                    RETURN_IF_ERROR(CheckKnownParams(p, "srtf", {"gputime"}));
                    ASSIGN_OR_RETURN(bool g, Param<bool>(p, "srtf", "gputime", false));
                    return std::unique_ptr<Policy>(new Srtf(g));
                  });

}  // namespace
}  // namespace gpufleet::sim
