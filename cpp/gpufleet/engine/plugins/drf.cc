// drf: Dominant Resource Fairness across jobs (Ghodsi et al., "Dominant Resource Fairness: Fair
// Allocation of Multiple Resource Types", NSDI 2011). A job's share is its largest fraction of any
// cluster resource (cpu, memory, whole-GPU equivalents); lower shares go first. A task may preempt
// one whose job would still hold a share at least as large as the preemptor's after the move
// (Volcano's drf preemptable rule).
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

constexpr double kShareDelta = 1e-6;

double DominantShare(const Resources& allocated, const Resources& total) {
  double share = 0;
  for (int r = 0; r < kNumResources; ++r)
    if (total[r] > 0) share = std::max(share, allocated[r] / total[r]);
  return share;
}

class Drf : public Plugin {
 public:
  void OnSessionOpen(Session& s) override {
    s.AddJobOrderFn(name(), [&s](int a, int b) {
      double sa = DominantShare(s.job(a).allocated, s.total());
      double sb = DominantShare(s.job(b).allocated, s.total());
      if (std::fabs(sa - sb) <= kShareDelta) return 0;
      return sa < sb ? -1 : 1;
    });
    s.AddPreemptableFn(name(), [&s](const TaskInfo& p, const std::vector<int>& cands) {
      const double mine = DominantShare(s.job(p.job).allocated + p.request, s.total());
      absl::flat_hash_map<int, Resources> left;
      std::vector<int> out;
      for (int c : cands) {
        const TaskInfo& t = s.task(c);
        auto [it, fresh] = left.try_emplace(t.job, s.job(t.job).allocated);
        Resources after = it->second - t.request;
        double theirs = DominantShare(after, s.total());
        if (mine < theirs || std::fabs(mine - theirs) <= kShareDelta) {
          out.push_back(c);
          it->second = after;
        }
      }
      return out;
    });
  }
};

GPUFLEET_REGISTER(Plugin,
    {.name = "drf",
     .description = "dominant resource fairness across jobs (Ghodsi et al. 2011)"},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(new Drf());
    });

}  // namespace
}  // namespace gpufleet::engine
