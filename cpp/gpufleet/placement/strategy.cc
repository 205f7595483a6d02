#include "gpufleet/placement/strategy.h"

#include "gpufleet/core/status_macros.h"

namespace gpufleet {

absl::StatusOr<std::unique_ptr<PlacementStrategy>> MakeStrategy(const std::string& spec) {
  ASSIGN_OR_RETURN(auto parsed, ParseSpec(spec));
  return Registry<PlacementStrategy>::Global().Create(parsed.first, parsed.second);
}

std::vector<std::string> StrategyNames() { return Registry<PlacementStrategy>::Global().Names(); }

}  // namespace gpufleet
