// bestfit: the BestFit baseline of Weng et al. (USENIX ATC 2023, "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"). The node whose remaining
// resources after the placement are smallest wins, remaining = 0.5 * free CPU / largest node CPU
// + 0.5 * free GPU share / largest node GPUs (128 cores and 8 GPUs by default). As in the paper's
// simulator the score 100 * (1 - remaining) is truncated to an integer, so near-equal nodes tie
// (the replay breaks ties at random). On the node, a shared pod takes the best-fit GPU.
#include "gpufleet/placement/strategies/normalised_score.h"

namespace gpufleet {
namespace {

class BestFit : public NormalisedScoreStrategy {
 public:
  using NormalisedScoreStrategy::NormalisedScoreStrategy;

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    const double cpu_after = static_cast<double>(CpuLeft(v) - t.cpu_milli);
    const double gpu_after = static_cast<double>(SlotsOf(v).total_left() - t.total_core());
    const double remaining = 0.5 * cpu_after / n().max_cpu_milli + 0.5 * gpu_after / n().max_core;
    return Finish(100.0 * (1.0 - remaining));
  }
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "bestfit",
     .description = "least remaining weighted (cpu, gpu share) after placement (Weng et al., "
                    "ATC 2023 baseline)",
     .params = NormalisationParams(),
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      ASSIGN_OR_RETURN(Normalisation n, ParseNormalisation(p));
      return std::unique_ptr<PlacementStrategy>(new BestFit(n));
    });

}  // namespace
}  // namespace gpufleet
