#include "gpufleet/core/json_text.h"

#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpufleet {
namespace {

// Thrown from the parser callback to stop at the first violation; caught in ParseJsonText.
struct StrictJsonError {
  absl::StatusCode code;
  std::string message;
};

}  // namespace

absl::StatusOr<Json> ParseJsonText(absl::string_view text, const std::string& what) {
  // One set of keys per open object, innermost last.
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
    // `depth` counts the enclosing containers: one opening at kMaxJsonDepth is one too many.
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth)
      throw StrictJsonError{absl::StatusCode::kOutOfRange,
                            absl::StrFormat("nested deeper than %d levels", kMaxJsonDepth)};
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        if (!open_objects.empty() && !open_objects.back().insert(key).second)
          throw StrictJsonError{absl::StatusCode::kInvalidArgument,
                            absl::StrFormat("duplicate key \"%s\"", absl::CEscape(key))};
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const StrictJsonError& e) {
    return absl::Status(e.code, absl::StrCat(what, ": ", e.message));
  } catch (const Json::exception& e) {
    // nlohmann's message quotes the last bytes read; escape them to keep one printable line.
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not JSON: ", absl::CEscape(e.what())));
  }
}

}  // namespace gpufleet
