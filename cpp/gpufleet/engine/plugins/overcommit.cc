// overcommit: Volcano's overcommit plugin, the cluster-wide admission limit of the enqueue action.
// The cluster counts as `overcommit-factor` times its capacity; a job is admitted while the
// minimum requests of the admitted jobs that do not run yet, plus this job's minimum, fit in that
// inflated capacity less what is in use, in every resource the job asks for. A factor above 1
// lets a little more wait in the queues than fits now, so the allocate action always has work.
//   overcommit(overcommit-factor=1.2)
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

constexpr char kFactor[] = "overcommit-factor";

class Overcommit : public Plugin {
 public:
  explicit Overcommit(double factor) : factor_(factor) {}
  void OnSessionOpen(Session& s) override {
    // What is in use when the session opens (every bound pod, whichever job it belongs to).
    Resources used;
    for (int i = 0; i < s.state().num_nodes(); ++i) {
      const NodeUsage& u = *s.state().View(i).usage;
      used[0] += static_cast<double>(u.cpu_used);
      used[1] += static_cast<double>(u.memory_used);
      used[2] += static_cast<double>(u.gpu_core_used) / 100.0;
    }
    Resources idle;
    for (int r = 0; r < kNumResources; ++r) idle[r] = s.total()[r] * factor_ - used[r];
    s.AddEnqueueableFn(name(), [&s, idle](const JobInfo& j) -> absl::Status {
      // Admitted jobs not running yet; the enqueue action adds each job it admits.
      Resources waiting;
      for (const QueueInfo& q : s.queues()) waiting += q.inqueue;
      for (int r = 0; r < kNumResources; ++r) {
        if (j.min_request[r] <= 0) continue;  // only what the job asks for (Volcano compares so)
        if (!ApproxLessEqual(waiting[r] + j.min_request[r], idle[r]))
          return absl::FailedPreconditionError(absl::StrFormat(
              "resource in cluster is overused: %s (admitted and waiting %g + this job %g > "
              "overcommitted idle %g)",
              kResourceNames[r], waiting[r], j.min_request[r], idle[r]));
      }
      return absl::OkStatus();
    });
  }

 private:
  double factor_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "overcommit",
     .description = "admit jobs while waiting minimums fit in overcommit-factor x capacity less "
                    "use",
     // Volcano falls back to 1.2 with a warning; a value that cannot be meant is an error here.
     .params = {{.name = kFactor, .type = ParamType::kNumber, .default_value = 1.2,
                 .help = "how many times its capacity the cluster counts as for admission",
                 .range = {.at_least = 1, .finite = true}}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      ASSIGN_OR_RETURN(double factor, p.Get<double>(kFactor));
      return std::unique_ptr<Plugin>(new Overcommit(factor));
    });

}  // namespace
}  // namespace gpufleet::engine
