#include "gpufleet/placement/fgd.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/gpu_share.h"

namespace gpufleet {
namespace {

class Fgd : public PlacementStrategy {
 public:
  Fgd(GpuWorkload workload, bool integer) : workload_(std::move(workload)), integer_(integer) {}

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    const ShareTask t = TaskOf(pod);
    pending_cpu_ = t.cpu_milli;
    GpuSlots s = SlotsOf(v);
    const int64_t cpu = CpuLeft(v);
    const double before = workload_.Fragmentation(v, s, cpu);
    double after;
    if (t.shared()) {
      int slot;
      after = BestShareSlot(t, v, s, cpu - t.cpu_milli, &slot);
      if (slot < 0) return 0.0;
    } else {
      if (t.count > 0) {
        if (!FirstFreeSlots(t, v, s, &scratch_)) return 0.0;
        for (int i : scratch_) s.left[i] = 0;
      }
      after = workload_.Fragmentation(v, s, cpu - t.cpu_milli);
    }
    // Fragmentation is in core percent; the sigmoid takes GPUs, as the paper's simulator does.
    double score = 100.0 / (1.0 + std::exp(-(before - after) / 100.0));
    if (integer_) score = std::trunc(score);
    return score;
  }

  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    if (r.count != 1 || r.whole()) return ChooseBestFitDevices(v, r, domains, chosen);
    // The GPU whose use leaves the least fragmentation, among those the mechanism allows.
    const GpuSlots s = SlotsOf(v);
    const int64_t cpu = CpuLeft(v) - pending_cpu_;
    int best = -1;
    double best_frag = 0.0;
    for (const auto& domain : domains) {
      for (int d : domain) {
        GpuSlots after = s;
        for (int i = 0; i < after.n; ++i)
          if (after.device[i] == d) after.left[i] -= static_cast<int>(std::min<int64_t>(r.core, after.left[i]));
        const double f = workload_.Fragmentation(v, after, cpu);
        if (best < 0 || f < best_frag) {
          best = d;
          best_frag = f;
        }
      }
    }
    if (best < 0) return false;
    *chosen = {best};
    return true;
  }

 private:
  // Least fragmentation over the GPUs a shared task fits on; *slot = -1 when none fits.
  double BestShareSlot(const ShareTask& t, const NodeView& v, GpuSlots& s, int64_t cpu_after,
                       int* slot) const {
    *slot = -1;
    double best = 0.0;
    for (int i = 0; i < s.n; ++i) {
      if (s.left[i] < t.core || !ModelAccepted(t, v, s.device[i])) continue;
      // GPUs with the same free share give the same result; try each value once.
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j)
        seen = s.left[j] == s.left[i] && ModelAccepted(t, v, s.device[j]);
      if (seen) continue;
      s.left[i] -= t.core;
      const double f = workload_.Fragmentation(v, s, cpu_after);
      s.left[i] += t.core;
      if (*slot < 0 || f < best) {
        best = f;
        *slot = i;
      }
    }
    return best;
  }

  GpuWorkload workload_;
  bool integer_;
  mutable int64_t pending_cpu_ = 0;
  mutable std::vector<int> scratch_;
};

GpuWorkload WholeGpuWorkload() {
  GpuWorkload::Entry e;
  e.task.core = 100;
  e.task.count = 1;
  e.weight = 1.0;
  return *GpuWorkload::Make({e});
}

GPUFLEET_REGISTER(PlacementStrategy, "fgd",
                  "fragmentation gradient descent: least growth of expected GPU fragmentation "
                  "against a workload distribution (Weng et al., ATC 2023); params: workload "
                  "([[cpu_milli, core_percent, gpu_count, weight], ...]), integer_scores=true",
                  [](const Json& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
                    RETURN_IF_ERROR(CheckKnownParams(p, "fgd", {"workload", "integer_scores"}));
                    ASSIGN_OR_RETURN(bool integer, Param<bool>(p, "fgd", "integer_scores", true));
                    GpuWorkload w = WholeGpuWorkload();
                    if (p.contains("workload")) {
                      auto parsed = GpuWorkload::FromJson(p["workload"]);
                      if (!parsed.ok())
                        return absl::InvalidArgumentError(
                            absl::StrCat("fgd: ", parsed.status().message()));
                      w = *std::move(parsed);
                    }
                    return MakeFgd(std::move(w), integer);
                  });

}  // namespace

std::unique_ptr<PlacementStrategy> MakeFgd(GpuWorkload workload, bool integer_scores) {
  return std::make_unique<Fgd>(std::move(workload), integer_scores);
}

}  // namespace gpufleet
