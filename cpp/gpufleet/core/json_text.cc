#include "gpufleet/core/json_text.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpufleet {

absl::StatusOr<Json> ParseJsonText(absl::string_view text) {
  bool too_deep = false;
  // `depth` counts the enclosing containers; a container opening at kMaxJsonDepth would be one
  // level too many. Returning false drops it unbuilt, so nothing deep is ever constructed.
  Json::parser_callback_t limit = [&too_deep](int depth, Json::parse_event_t event, Json&) {
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth) too_deep = true;
    return !too_deep;
  };
  Json j;
  try {
    j = Json::parse(text.begin(), text.end(), limit);
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for 1e999
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON (", e.what(), ")"));
  }
  if (too_deep)
    return absl::OutOfRangeError(absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels"));
  return j;
}

}  // namespace gpufleet
