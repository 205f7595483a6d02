// JSON text from outside the process (pod annotations, snapshot files, parameter strings) parsed
// with a nesting limit. nlohmann parses and destroys values without recursion, but copying,
// comparing and dumping a value recurse once per level, so a few thousand levels of "[[[[" would
// overflow the stack in the readers. No input of ours nests more than a handful of levels.
#ifndef GPUFLEET_CORE_JSON_TEXT_H_
#define GPUFLEET_CORE_JSON_TEXT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpufleet/core/registry.h"

namespace gpufleet {

// Objects and lists may nest this deep (a scalar inside kMaxJsonDepth lists is fine).
inline constexpr int kMaxJsonDepth = 64;

// The value; InvalidArgument "not valid JSON (<where and why>)"; or, for valid JSON that nests
// too deep, OutOfRange "JSON nested deeper than 64 levels".
absl::StatusOr<Json> ParseJsonText(absl::string_view text);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_JSON_TEXT_H_
