#include "gpufleet/placement/strategy.h"

#include "gpufleet/core/status_macros.h"

namespace gpufleet {

absl::StatusOr<std::unique_ptr<PlacementStrategy>> MakeStrategy(const std::string& spec) {
  ASSIGN_OR_RETURN(auto parsed, ParseSpec(spec));
  return Registry<PlacementStrategy>::Global().Create(parsed.first, parsed.second);
}

Json StrategyTraits::ToJson() const {
  return {{"deterministic", deterministic}, {"concurrent_safe", concurrent_safe}};
}

absl::StatusOr<PlacementStrategy*> StrategyCache::Get(const std::string& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_spec_.find(spec);
  if (it != by_spec_.end()) return it->second.get();
  // A bad spec is not remembered: it fails the same way every time.
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementStrategy> made, MakeStrategy(spec));
  return by_spec_.emplace(spec, std::move(made)).first->second.get();
}

}  // namespace gpufleet
