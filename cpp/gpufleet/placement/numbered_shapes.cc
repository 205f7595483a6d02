#include "gpufleet/placement/numbered_shapes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/placement/placer.h"

namespace gpufleet {

void NumberedShapeScores::Clear() {
  entries_.clear();
  model_masks_.clear();
  strategy_id_ = log_id_ = 0;
  num_nodes_ = -1;
}

bool NumberedShapeScores::Fits(const ClusterState& state, const Pod& pod, int node) {
  // Node totals rule most nodes out without a device scan or a reason string.
  if (!QuickMayFit(pod, state.usage(node))) return false;
  if ((!pod.node_selector.empty() || state.usage(node).has_taints) &&
      !FitsNodeConstraints(pod, state.node(node)).ok())
    return false;
  return state.Filter(pod, node).ok();
}

const uint8_t* NumberedShapeScores::ModelMask(const ClusterState& state, const Pod& pod) {
  const DeviceRequest* gpu = pod.Find(kGpu);
  const int count = gpu == nullptr ? 0 : gpu->count;
  std::string key = absl::StrCat(count, ":", absl::StrJoin(pod.gpu_models, "|"));
  auto [it, added] = model_masks_.try_emplace(std::move(key));
  std::vector<uint8_t>& mask = it->second;
  if (added) {
    const int n = state.num_nodes();
    mask.assign(n, 1);
    if (count > 0 && !pod.gpu_models.empty()) {
      for (int i = 0; i < n; ++i) {
        int accepted = 0;
        for (const Device& d : state.node(i).devices)
          accepted += d.type == kGpu && std::find(pod.gpu_models.begin(), pod.gpu_models.end(),
                                                  d.model) != pod.gpu_models.end();
        mask[i] = accepted >= count;
      }
    }
  }
  return mask.data();
}

int NumberedShapeScores::Choose(const ClusterState& state, const Pod& pod, int shape,
                                const PlacementStrategy& strategy, Allocation* plan) {
  const int n = state.num_nodes();
  if (strategy.instance_id() != strategy_id_ || state.changes().id() != log_id_ ||
      n != num_nodes_) {
    Clear();
    strategy_id_ = strategy.instance_id();
    log_id_ = state.changes().id();
    num_nodes_ = n;
  }
  if (shape < 0) return -1;
  if (static_cast<size_t>(shape) >= entries_.size()) entries_.resize(shape + 1);
  Entry& e = entries_[shape];
  if (e.models == nullptr) {
    e.score.assign(n, kInfeasible);
    e.seen.assign(n, 0);
    e.models = ModelMask(state, pod);
  }
  const bool cache_scores = strategy.Deterministic();
  const uint8_t* models = e.models;
  const bool by_plan = strategy.ScoreNeedsPlan();
  auto score_of = [&](int i) {
    return by_plan ? ScoreOnNode(state, pod, i, strategy)
                   : strategy.ScoreNode(state.View(i), pod, {});
  };
  const uint64_t* version = state.node_versions();
  double* score = e.score.data();
  uint64_t* seen = e.seen.data();
  int best = -1;
  double best_score = kInfeasible;
  for (int i = 0; i < n; ++i) {
    if (!models[i]) continue;
    if (seen[i] != version[i]) {
      seen[i] = version[i];
      if (!Fits(state, pod, i))
        score[i] = kInfeasible;
      else
        score[i] = cache_scores ? score_of(i) : kFeasible;
    }
    if (score[i] == kInfeasible) continue;
    // A random strategy draws for every feasible node, in node order, every time.
    const double s = cache_scores ? score[i] : score_of(i);
    if (best < 0 || s > best_score) {
      best = i;
      best_score = s;
    }
  }
  if (best < 0) return -1;
  // Score the winner once more right before planning: a strategy may plan devices for the pod it
  // scored last (fgd does), and a cached score may have come from an earlier pod of this shape.
  if (cache_scores) score_of(best);
  if (!PlanOnNode(state, pod, best, strategy, plan).ok()) return -1;
  return best;
}

}  // namespace gpufleet
