// JSON text from outside the process (scenario and config files, pod annotations, snapshot files,
// parameter strings), parsed strictly: duplicate keys, excessive nesting, NaN/Infinity, numbers
// out of range and binary junk are refused with a one-line message. nlohmann alone keeps the last
// of duplicate keys silently, and while it parses without recursion, copying, comparing and
// dumping a value recurse once per level: a few thousand levels of "[[[[" would overflow the
// stack in the readers. No input of ours nests more than a handful of levels.
#ifndef GPUFLEET_CORE_JSON_TEXT_H_
#define GPUFLEET_CORE_JSON_TEXT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpufleet/core/registry.h"

namespace gpufleet {

// Objects and lists may nest this deep; deeper text is refused before it is built.
inline constexpr int kMaxJsonDepth = 64;

// The value, or an error starting with `what`: OutOfRange "<what>: nested deeper than 64 levels",
// InvalidArgument for duplicate keys and anything nlohmann refuses (the offending bytes escaped).
absl::StatusOr<Json> ParseJsonText(absl::string_view text, const std::string& what);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_JSON_TEXT_H_
