// Strict reading of user-written JSON: unknown keys are errors with a did-you-mean, and JSON text
// with duplicate keys, excessive nesting, NaN/Infinity or binary junk is refused with a one-line
// message (nlohmann's parser alone keeps the last of duplicate keys silently).
#ifndef GPUFLEET_IO_STRICT_JSON_H_
#define GPUFLEET_IO_STRICT_JSON_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpufleet/core/json_text.h"  // ParseJsonText, kMaxJsonDepth
#include "gpufleet/core/registry.h"

namespace gpufleet {

// `; did you mean "requests"?` for a near miss of one of `known`, else `; known: a, b, c`.
std::string DidYouMean(const std::string& word, const std::vector<std::string>& known);

// Every key of the object `j` must be one of `known`:
//   `pod p: unknown field "requets"; did you mean "requests"?`
absl::Status CheckKnownKeys(const Json& j, const std::string& owner,
                            const std::vector<std::string>& known);

}  // namespace gpufleet

#endif  // GPUFLEET_IO_STRICT_JSON_H_
