// nodeorder: node scores as a weighted sum, each term in [0, 100] (Kubernetes' scoring plugins):
//   binpack:          the node's allocated fraction after placing the task (MostAllocated);
//   leastrequested:   one minus that fraction (LeastAllocated);
//   spread:           the share of the job's other tasks NOT on the node (spreads a job's tasks);
//   balancedresource: how evenly cpu, memory and GPUs would be used (BalancedAllocation).
// Weights are arguments: nodeorder(binpack=1, spread=0, leastrequested=0). Volcano's argument
// names are accepted too: `mostrequested.weight` and `leastrequested.weight` set the binpack and
// leastrequested weights, `balancedresource.weight` the balance term. The terms Volcano takes from
// pod affinity, preferred node affinity, PreferNoSchedule taints, images and topology spread
// constraints are accepted and score nothing: gpufleet's pods do not carry those preferences.
// gpufleet's defaults pack GPU nodes (binpack 1); Volcano's spread (leastrequested 1,
// balancedresource 1).
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/placement/node_score.h"

namespace gpufleet::engine {
namespace {

struct NodeOrderWeights {
  double binpack = 1, spread = 0, least = 0, balanced = 0;
};

// Kubernetes' BalancedAllocation: 100 x (1 - standard deviation of the used fractions after
// placing), over cpu, memory and, when the task asks for GPUs and the node has some, GPUs (the
// resources Volcano configures it with), truncated to an integer as Kubernetes does.
double BalancedScore(const NodeUsage& u, const Pod& pod) {
  std::vector<double> fractions;
  auto add = [&](double used, double capacity) {
    if (capacity > 0) fractions.push_back(std::min(1.0, used / capacity));
  };
  add(static_cast<double>(u.cpu_used + pod.cpu_milli), static_cast<double>(u.cpu_capacity));
  add(static_cast<double>(u.memory_used + pod.memory_bytes),
      static_cast<double>(u.memory_capacity));
  if (pod.GpuShare() > 0) add(u.gpu_core_used / 100.0 + pod.GpuShare(), u.gpu_count);
  double deviation = 0;
  if (fractions.size() == 2) {
    deviation = std::fabs(fractions[0] - fractions[1]) / 2;
  } else if (fractions.size() > 2) {
    double mean = 0, sum = 0;
    for (double f : fractions) mean += f / fractions.size();
    for (double f : fractions) sum += (f - mean) * (f - mean);
    deviation = std::sqrt(sum / fractions.size());
  }
  return std::floor((1 - deviation) * 100.0);
}

class NodeOrder : public Plugin {
 public:
  explicit NodeOrder(NodeOrderWeights w) : w_(w) {}
  void OnSessionOpen(Session& s) override {
    if (w_.spread > 0) s.DisableNodeClasses();  // the spread term depends on the job, per node
    s.AddNodeScoreFn(name(), [this, &s](const TaskInfo& t, int node) {
      double score = 0;
      if (w_.binpack > 0 || w_.least > 0) {
        double f = AllocatedFractionAfter(s.state().View(node), *t.pod);
        score += w_.binpack * 100.0 * f + w_.least * 100.0 * (1.0 - f);
      }
      if (w_.balanced > 0) score += w_.balanced * BalancedScore(*s.state().View(node).usage, *t.pod);
      if (w_.spread > 0) {
        const JobInfo& j = s.job(t.job);
        int here = 0;
        for (int id : j.tasks) here += s.task(id).node == node && s.task(id).occupies();
        score += w_.spread * 100.0 * (1.0 - static_cast<double>(here) / j.tasks.size());
      }
      return score;
    });
  }

 private:
  NodeOrderWeights w_;
};

// Volcano's names for terms gpufleet has no input for, with Volcano's defaults (documentation).
constexpr std::pair<const char*, int> kVolcanoOnly[] = {
    {"nodeaffinity.weight", 2}, {"podaffinity.weight", 2}, {"tainttoleration.weight", 3},
    {"imagelocality.weight", 1}, {"podtopologyspread.weight", 2}};

// Every weight is a finite number >= 0.
ParamSpec Weight(std::string name, Json default_value, std::string help) {
  return {.name = std::move(name), .type = ParamType::kNumber,
          .default_value = std::move(default_value), .help = std::move(help),
          .range = {.at_least = 0, .finite = true}};
}

std::vector<ParamSpec> NodeOrderParams() {
  std::vector<ParamSpec> out = {
      Weight("binpack", 1.0, "weight of the most-allocated score"),
      Weight("spread", 0.0, "weight of the job-spread score"),
      Weight("leastrequested", 0.0, "weight of Kubernetes' LeastRequested score"),
      Weight("mostrequested.weight", Json(),
             "Volcano's name for the binpack weight; given, it replaces binpack (Volcano's "
             "default 0)"),
      Weight("leastrequested.weight", Json(),
             "Volcano's name for the leastrequested weight; given, it replaces leastrequested "
             "(Volcano's default 1)"),
      Weight("balancedresource.weight", Json(),
             "weight of Kubernetes' BalancedAllocation score over cpu, memory, GPUs (0 if not "
             "given; Volcano's default 1)")};
  for (const auto& [key, volcano_default] : kVolcanoOnly)
    out.push_back(Weight(key, Json(),
                         absl::StrFormat("accepted for Volcano compatibility; scores nothing "
                                         "(gpufleet's pods carry no such preference; Volcano's "
                                         "default %d)",
                                         volcano_default)));
  return out;
}

GPUFLEET_REGISTER(Plugin,
    {.name = "nodeorder",
     .description = "weighted node scores: binpack, spread, leastrequested, balancedresource",
     .params = NodeOrderParams()},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      NodeOrderWeights w;
      ASSIGN_OR_RETURN(w.binpack, p.Get<double>("binpack"));
      ASSIGN_OR_RETURN(w.spread, p.Get<double>("spread"));
      ASSIGN_OR_RETURN(w.least, p.Get<double>("leastrequested"));
      if (p.Has("mostrequested.weight")) {
        ASSIGN_OR_RETURN(w.binpack, p.Get<double>("mostrequested.weight"));
      }
      if (p.Has("leastrequested.weight")) {
        ASSIGN_OR_RETURN(w.least, p.Get<double>("leastrequested.weight"));
      }
      if (p.Has("balancedresource.weight")) {
        ASSIGN_OR_RETURN(w.balanced, p.Get<double>("balancedresource.weight"));
      }
      return std::unique_ptr<Plugin>(new NodeOrder(w));
    });

}  // namespace
}  // namespace gpufleet::engine
