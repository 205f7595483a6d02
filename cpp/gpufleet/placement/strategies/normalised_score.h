// Shared frame of the openb baselines that score a node from its free (cpu, gpu share) normalised
// by the largest node (BestFit, DotProd): the normalisation parameters, the paper simulator's
// integer truncation of scores, and the best-fit GPU choice on the winning node. Each baseline
// supplies only its score formula.
#ifndef GPUFLEET_PLACEMENT_STRATEGIES_NORMALISED_SCORE_H_
#define GPUFLEET_PLACEMENT_STRATEGIES_NORMALISED_SCORE_H_

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/strategies/gpu_share.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

struct Normalisation {
  double max_cpu_milli = 128000;  // largest node's CPU
  double max_core = 800;          // largest node's GPUs, in percent of one GPU
  bool integer_scores = true;     // truncate scores as the paper's simulator does
};

inline std::vector<ParamSpec> NormalisationParams() {
  return {{.name = "max_cpu_milli", .type = ParamType::kNumber, .default_value = 128000,
           .help = "largest node's CPU, milli-cores", .range = {.above = 0}},
          {.name = "max_gpus", .type = ParamType::kNumber, .default_value = 8,
           .help = "largest node's GPUs", .range = {.above = 0}},
          {"integer_scores", ParamType::kBool, true, "truncate scores as the paper does"}};
}

// Reads the NormalisationParams(); errors name the strategy and the parameter.
inline absl::StatusOr<Normalisation> ParseNormalisation(const Params& p) {
  Normalisation n;
  ASSIGN_OR_RETURN(n.max_cpu_milli, p.Get<double>("max_cpu_milli"));
  ASSIGN_OR_RETURN(double gpus, p.Get<double>("max_gpus"));
  ASSIGN_OR_RETURN(n.integer_scores, p.Get<bool>("integer_scores"));
  n.max_core = 100.0 * gpus;
  return n;
}

class NormalisedScoreStrategy : public PlacementStrategy {
 public:
  explicit NormalisedScoreStrategy(Normalisation n) : n_(n) {}

  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    return ChooseBestFitDevices(v, r, domains, chosen);
  }

 protected:
  // A raw score in [0, 100] after the optional truncation.
  double Finish(double score) const {
    if (n_.integer_scores) score = std::trunc(score);
    return std::clamp(score, 0.0, 100.0);
  }
  const Normalisation& n() const { return n_; }

 private:
  Normalisation n_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_STRATEGIES_NORMALISED_SCORE_H_
