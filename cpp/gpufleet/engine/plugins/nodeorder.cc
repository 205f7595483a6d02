// nodeorder: node scores as a weighted sum, each term in [0, 100] (Kubernetes' scoring plugins):
//   binpack:        the node's allocated fraction after placing the task (MostAllocated);
//   leastrequested: one minus that fraction (LeastAllocated);
//   spread:         the share of the job's other tasks NOT on the node (spreads a job's tasks).
// Weights are arguments: nodeorder(binpack=1, spread=0, leastrequested=0).
#include <cmath>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/placement/node_score.h"

namespace gpufleet::engine {
namespace {

class NodeOrder : public Plugin {
 public:
  NodeOrder(double binpack, double spread, double least)
      : binpack_(binpack), spread_(spread), least_(least) {}
  std::string name() const override { return "nodeorder"; }
  void OnSessionOpen(Session& s) override {
    if (spread_ > 0) s.DisableNodeClasses();  // the spread term depends on the job, per node
    s.AddNodeScoreFn(name(), [this, &s](const TaskInfo& t, int node) {
      double score = 0;
      if (binpack_ > 0 || least_ > 0) {
        double f = AllocatedFractionAfter(s.state().View(node), *t.pod);
        score += binpack_ * 100.0 * f + least_ * 100.0 * (1.0 - f);
      }
      if (spread_ > 0) {
        const JobInfo& j = s.job(t.job);
        int here = 0;
        for (int id : j.tasks) here += s.task(id).node == node && s.task(id).occupies();
        score += spread_ * 100.0 * (1.0 - static_cast<double>(here) / j.tasks.size());
      }
      return score;
    });
  }

 private:
  double binpack_, spread_, least_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "nodeorder",
     .description = "weighted node scores: binpack, spread, leastrequested",
     .params = {{"binpack", ParamType::kNumber, 1.0, "weight of the most-allocated score (>= 0)"},
                {"spread", ParamType::kNumber, 0.0, "weight of the least-allocated score (>= 0)"},
                {"leastrequested", ParamType::kNumber, 0.0,
                 "weight of Kubernetes' LeastRequested score (>= 0)"}},
     .capabilities = {"node-score"}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      ASSIGN_OR_RETURN(double binpack, p.Get<double>("binpack"));
      ASSIGN_OR_RETURN(double spread, p.Get<double>("spread"));
      ASSIGN_OR_RETURN(double least, p.Get<double>("leastrequested"));
      for (double w : {binpack, spread, least})
        if (!(w >= 0) || std::isinf(w))
          return absl::InvalidArgumentError(
              absl::StrFormat("nodeorder: weights must be finite and >= 0 (got binpack=%g, "
                              "spread=%g, leastrequested=%g)", binpack, spread, least));
      return std::unique_ptr<Plugin>(new NodeOrder(binpack, spread, least));
    });

}  // namespace
}  // namespace gpufleet::engine
