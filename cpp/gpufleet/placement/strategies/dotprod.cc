// dotprod: the DotProd baseline of Weng et al. (USENIX ATC 2023, "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"), after Tetris's alignment
// score. Node and pod become two-dimensional vectors (free CPU, total free GPU share) and
// (CPU request, total GPU request), each dimension divided by the largest node spec (128 cores,
// 8 GPUs by default). The node with the smallest dot product wins: the pod goes where the
// resources it uses are scarcest, which packs. As in the paper's simulator the score is
// 100 * (1 - dot / 2) truncated to an integer, so near-equal nodes tie (the replay breaks ties at
// random, as kube-scheduler does). On the node, a shared pod takes the best-fit GPU.
#include "gpufleet/placement/strategies/normalised_score.h"

namespace gpufleet {
namespace {

class DotProd : public NormalisedScoreStrategy {
 public:
  using NormalisedScoreStrategy::NormalisedScoreStrategy;

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    const double max_cpu = n().max_cpu_milli, max_core = n().max_core;
    const double cpu = static_cast<double>(CpuLeft(v)) / max_cpu * (t.cpu_milli / max_cpu);
    const double gpu = static_cast<double>(SlotsOf(v).total_left()) / max_core *
                       (static_cast<double>(t.total_core()) / max_core);
    return Finish(100.0 * (1.0 - (cpu + gpu) / 2.0));
  }
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "dotprod",
     .description = "smallest dot product of free (cpu, gpu) and request, Tetris-style (Weng "
                    "et al., ATC 2023 baseline)",
     .params = NormalisationParams(),
     .traits = {.deterministic = true, .concurrent_safe = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      ASSIGN_OR_RETURN(Normalisation n, ParseNormalisation(p));
      return std::unique_ptr<PlacementStrategy>(new DotProd(n));
    });

}  // namespace
}  // namespace gpufleet
