// random: the Random baseline of Weng et al. (USENIX ATC 2023, "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent"): a uniformly random feasible node,
// and on it a uniformly random GPU with enough free share. Seeded (parameter "seed"), so a run is
// reproducible; the generator advances with every score, so one instance serves one run (one
// cluster: StrategyCache), and its owner serialises every use.
#include <random>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

class RandomFit : public PlacementStrategy {
 public:
  explicit RandomFit(uint64_t seed) : rng_(seed) {}

  double ScoreNode(const NodeView&, const Pod&, absl::Span<const DeviceGrant>) const override {
    // Every feasible node gets an independent uniform score, so the best one is uniform.
    return std::uniform_real_distribution<double>(0.0, 100.0)(rng_);
  }

  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    std::vector<const std::vector<int>*> usable;
    for (const auto& d : domains)
      if (static_cast<int>(d.size()) >= r.count) usable.push_back(&d);
    if (usable.empty()) return false;
    const std::vector<int>& domain =
        *usable[std::uniform_int_distribution<size_t>(0, usable.size() - 1)(rng_)];
    if (r.count == 1 && !r.whole()) {
      *chosen = {domain[std::uniform_int_distribution<size_t>(0, domain.size() - 1)(rng_)]};
    } else {
      // Whole GPUs are interchangeable: the first free ones, as the paper's simulator does.
      chosen->assign(domain.begin(), domain.begin() + r.count);
    }
    return true;
  }

 private:
  mutable std::mt19937_64 rng_;
};

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "random",
     .description = "uniformly random feasible node and fitting GPU, seeded (Weng et al., ATC "
                    "2023 baseline)",
     .params = {{"seed", ParamType::kInt, 0, "generator seed (unsigned 64-bit)"}},
     // Every draw advances the generator: scores cannot be kept, and one thread at a time.
     .traits = {.deterministic = false, .concurrent_safe = false}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      ASSIGN_OR_RETURN(uint64_t seed, p.Get<uint64_t>("seed"));
      return std::unique_ptr<PlacementStrategy>(new RandomFit(seed));
    });

}  // namespace
}  // namespace gpufleet
