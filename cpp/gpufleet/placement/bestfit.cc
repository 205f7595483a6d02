// bestfit: the BestFit baseline of Weng et al. (USENIX ATC 2023, "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"). The node whose remaining
// resources after the placement are smallest wins, remaining = 0.5 * free CPU / largest node CPU
// + 0.5 * free GPU share / largest node GPUs (128 cores and 8 GPUs by default). As in the paper's
// simulator the score 100 * (1 - remaining) is truncated to an integer, so near-equal nodes tie
// (the replay breaks ties at random). On the node, a shared pod takes the best-fit GPU.
#include <algorithm>
#include <cmath>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/gpu_share.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

class BestFit : public PlacementStrategy {
 public:
  BestFit(double max_cpu_milli, double max_gpus, bool integer)
      : max_cpu_(max_cpu_milli), max_core_(100.0 * max_gpus), integer_(integer) {}

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    const double cpu_after = static_cast<double>(CpuLeft(v) - t.cpu_milli);
    const double gpu_after = static_cast<double>(SlotsOf(v).total_left() - t.total_core());
    const double remaining = 0.5 * cpu_after / max_cpu_ + 0.5 * gpu_after / max_core_;
    double score = 100.0 * (1.0 - remaining);
    if (integer_) score = std::trunc(score);
    return std::clamp(score, 0.0, 100.0);
  }
  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    return ChooseBestFitDevices(v, r, domains, chosen);
  }

 private:
  double max_cpu_, max_core_;
  bool integer_;
};

GPUFLEET_REGISTER(PlacementStrategy, "bestfit",
                  "least remaining weighted (cpu, gpu share) after placement (Weng et al., ATC 2023 "
                  "baseline); params: max_cpu_milli=128000, max_gpus=8, integer_scores=true",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
                    const char* kName = "bestfit";
                    RETURN_IF_ERROR(CheckKnownParams(p, kName,
                                                     {"max_cpu_milli", "max_gpus", "integer_scores"}));
                    ASSIGN_OR_RETURN(double cpu, Param<double>(p, kName, "max_cpu_milli", 128000));
                    ASSIGN_OR_RETURN(double gpus, Param<double>(p, kName, "max_gpus", 8));
                    ASSIGN_OR_RETURN(bool integer, Param<bool>(p, kName, "integer_scores", true));
                    if (!(cpu > 0) || !(gpus > 0))
                      return absl::InvalidArgumentError(
                          "bestfit: max_cpu_milli and max_gpus must be positive");
                    return std::unique_ptr<PlacementStrategy>(new BestFit(cpu, gpus, integer));
                  });

}  // namespace
}  // namespace gpufleet
