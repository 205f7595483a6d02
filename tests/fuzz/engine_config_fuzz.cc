// The scheduler configuration (actions and plugin tiers). Any bytes: a configuration or an error
// naming the entry. A configuration that reads is written back by ToJson to the same one.
#include <cstdint>

#include "fuzz_util.h"
#include "gpufleet/engine/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const std::optional<Json> parsed = fuzz::ReadJson(data, size);
  if (!parsed) return 0;
  const Json& j = *parsed;
  absl::StatusOr<engine::Config> config = engine::ConfigFromJson(j);
  if (!config.ok()) {
    FUZZ_CHECK(fuzz::IsUserError(config.status()) && !config.status().message().empty(), "%s",
               config.status().ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(!config->actions.empty() && !config->tiers.empty(), "empty configuration accepted");
  const Json written = config->ToJson();
  absl::StatusOr<engine::Config> again = engine::ConfigFromJson(written);
  FUZZ_CHECK(again.ok(), "ToJson output does not read back: %s\n  %s",
             again.status().ToString().c_str(), written.dump().c_str());
  FUZZ_CHECK(again->ToJson() == written, "configuration changed on a round trip:\n  %s\n  %s",
             written.dump().c_str(), again->ToJson().dump().c_str());
  return 0;
}
