#include "gpufleet/sim/openb_replay_chooser.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/placement/placer.h"

namespace gpufleet {

ShapeChooser::ShapeChooser(const ClusterState& state, const PlacementStrategy& strategy,
                           int shapes)
    : state_(state), strategy_(strategy), cache_scores_(strategy.Deterministic()),
      entries_(static_cast<size_t>(shapes)) {}

bool ShapeChooser::Fits(const Pod& pod, int node) const {
  // Node totals rule most nodes out without a device scan or a reason string.
  if (!QuickMayFit(pod, state_.usage(node))) return false;
  if ((!pod.node_selector.empty() || state_.usage(node).has_taints) &&
      !FitsNodeConstraints(pod, state_.node(node)).ok())
    return false;
  return state_.Filter(pod, node).ok();
}

const uint8_t* ShapeChooser::ModelMask(const Pod& pod) {
  const DeviceRequest* gpu = pod.Find(kGpu);
  const int count = gpu == nullptr ? 0 : gpu->count;
  std::string key = absl::StrCat(count, ":", absl::StrJoin(pod.gpu_models, "|"));
  auto [it, added] = model_masks_.try_emplace(std::move(key));
  std::vector<uint8_t>& mask = it->second;
  if (added) {
    const int n = state_.num_nodes();
    mask.assign(n, 1);
    if (count > 0 && !pod.gpu_models.empty()) {
      for (int i = 0; i < n; ++i) {
        int accepted = 0;
        for (const Device& d : state_.node(i).devices)
          accepted += d.type == kGpu && std::find(pod.gpu_models.begin(), pod.gpu_models.end(),
                                                  d.model) != pod.gpu_models.end();
        mask[i] = accepted >= count;
      }
    }
  }
  return mask.data();
}

int ShapeChooser::Choose(const Pod& pod, int shape, Allocation* plan) {
  Entry& e = entries_[shape];
  const int n = state_.num_nodes();
  if (static_cast<int>(e.score.size()) != n) {
    e.score.assign(n, kInfeasible);
    e.seen.assign(n, 0);
    e.models = ModelMask(pod);
  }
  const uint8_t* models = e.models;
  const bool by_plan = strategy_.ScoreNeedsPlan();
  auto score_of = [&](int i) {
    return by_plan ? ScoreOnNode(state_, pod, i, strategy_)
                   : strategy_.ScoreNode(state_.View(i), pod, {});
  };
  const uint64_t* version = state_.node_versions();
  double* score = e.score.data();
  uint64_t* seen = e.seen.data();
  int best = -1;
  double best_score = kInfeasible;
  for (int i = 0; i < n; ++i) {
    if (!models[i]) continue;
    if (seen[i] != version[i]) {
      seen[i] = version[i];
      if (!Fits(pod, i))
        score[i] = kInfeasible;
      else
        score[i] = cache_scores_ ? score_of(i) : kFeasible;
    }
    if (score[i] == kInfeasible) continue;
    // A random strategy draws for every feasible node, in node order, every time.
    const double s = cache_scores_ ? score[i] : score_of(i);
    if (best < 0 || s > best_score) {
      best = i;
      best_score = s;
    }
  }
  if (best < 0) return -1;
  // Score the winner once more right before planning: a strategy may plan devices for the pod it
  // scored last (fgd does), and a cached score may have come from an earlier pod of this shape.
  if (cache_scores_) score_of(best);
  if (!PlanOnNode(state_, pod, best, strategy_, plan).ok()) return -1;
  return best;
}

}  // namespace gpufleet
