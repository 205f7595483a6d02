// dotprod: the DotProd baseline of Weng et al. (USENIX ATC 2023, "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"), after Tetris's alignment
// score. Node and pod become two-dimensional vectors (free CPU, total free GPU share) and
// (CPU request, total GPU request), each dimension divided by the largest node spec (128 cores,
// 8 GPUs by default). The node with the smallest dot product wins: the pod goes where the
// resources it uses are scarcest, which packs. As in the paper's simulator the score is
// 100 * (1 - dot / 2) truncated to an integer, so near-equal nodes tie (the replay breaks ties at
// random, as kube-scheduler does). On the node, a shared pod takes the best-fit GPU.
#include <algorithm>
#include <cmath>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/gpu_share.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

class DotProd : public PlacementStrategy {
 public:
  DotProd(double max_cpu_milli, double max_gpus, bool integer)
      : max_cpu_(max_cpu_milli), max_core_(100.0 * max_gpus), integer_(integer) {}

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    const double cpu = static_cast<double>(CpuLeft(v)) / max_cpu_ * (t.cpu_milli / max_cpu_);
    const double gpu = static_cast<double>(SlotsOf(v).total_left()) / max_core_ *
                       (static_cast<double>(t.total_core()) / max_core_);
    double score = 100.0 * (1.0 - (cpu + gpu) / 2.0);
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

GPUFLEET_REGISTER(PlacementStrategy, "dotprod",
                  "smallest dot product of free (cpu, gpu) and request, Tetris-style (Weng et al., "
                  "ATC 2023 baseline); params: max_cpu_milli=128000, max_gpus=8, integer_scores=true",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
                    const char* kName = "dotprod";
                    RETURN_IF_ERROR(CheckKnownParams(p, kName,
                                                     {"max_cpu_milli", "max_gpus", "integer_scores"}));
                    ASSIGN_OR_RETURN(double cpu, Param<double>(p, kName, "max_cpu_milli", 128000));
                    ASSIGN_OR_RETURN(double gpus, Param<double>(p, kName, "max_gpus", 8));
                    ASSIGN_OR_RETURN(bool integer, Param<bool>(p, kName, "integer_scores", true));
                    if (!(cpu > 0) || !(gpus > 0))
                      return absl::InvalidArgumentError(
                          "dotprod: max_cpu_milli and max_gpus must be positive");
                    return std::unique_ptr<PlacementStrategy>(new DotProd(cpu, gpus, integer));
                  });

}  // namespace
}  // namespace gpufleet
