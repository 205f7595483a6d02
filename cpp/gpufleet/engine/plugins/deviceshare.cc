// deviceshare: which devices of the chosen node a task gets, by a registered placement strategy
// (binpack, spread, topology, ...), plus that strategy's node score with a weight so device-level
// fit (e.g. keeping whole GPUs free, NVLink groups) also steers the node choice.
//   deviceshare(strategy="binpack", weight=1)
#include <cmath>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/placement/node_plan.h"

namespace gpufleet::engine {
namespace {

class DeviceShare : public Plugin {
 public:
  DeviceShare(std::string spec, double weight) : spec_(std::move(spec)), weight_(weight) {}
  void OnSessionOpen(Session& s) override {
    auto strategy = MakeStrategy(spec_);
    if (!strategy.ok()) return;  // checked when the configuration was parsed
    s.SetDeviceStrategy(name(), *std::move(strategy));
    if (weight_ <= 0) return;
    s.AddNodeScoreFn(name(), [this, &s](const TaskInfo& t, int node) {
      return weight_ * ScoreOnNode(s.state(), *t.pod, node, s.strategy());
    });
  }

 private:
  std::string spec_;
  double weight_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "deviceshare",
     .description = "device choice by a placement strategy, and its node score",
     .params = {{"strategy", ParamType::kString, "binpack", "placement strategy spec"},
                {.name = "weight", .type = ParamType::kNumber, .default_value = 1.0,
                 .help = "weight of the strategy's node score",
                 .range = {.at_least = 0, .finite = true}}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      ASSIGN_OR_RETURN(std::string spec, p.Get<std::string>("strategy"));
      ASSIGN_OR_RETURN(double weight, p.Get<double>("weight"));
      auto strategy = MakeStrategy(spec);
      if (!strategy.ok())
        return absl::InvalidArgumentError(
            absl::StrFormat("deviceshare: strategy: %s", strategy.status().message()));
      return std::unique_ptr<Plugin>(new DeviceShare(spec, weight));
    });

}  // namespace
}  // namespace gpufleet::engine
