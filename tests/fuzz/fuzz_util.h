// Shared pieces of the fuzz targets: a check that stops the run with a message (libFuzzer saves
// the input that reached it), and the "key=value" line format the map-shaped targets read.
#ifndef GPUFLEET_TESTS_FUZZ_FUZZ_UTIL_H_
#define GPUFLEET_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "gpufleet/core/json_text.h"
#include "gpufleet/core/registry.h"

namespace gpufleet::fuzz {

// An invariant failure is a finding like a sanitizer report: print what broke and abort.
#define FUZZ_CHECK(cond, ...)                                                    \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, "  " __VA_ARGS__);                                    \
      std::fprintf(stderr, "\n");                                                \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

inline absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// One entry per line, split at the first '=' ("name=value"); a line without '=' is a name with an
// empty value; a repeated name keeps its last value. Readable seeds, and any bytes are valid.
inline std::map<std::string, std::string> KeyValueLines(absl::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    size_t end = text.find('\n');
    absl::string_view line = text.substr(0, end);
    text = end == absl::string_view::npos ? absl::string_view() : text.substr(end + 1);
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) out[std::string(line)] = "";
    else out[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return out;
}

// The bytes as JSON through the core's entry for outside text (ParseJsonText, with its nesting
// limit and duplicate-key check), or nothing when they are not JSON. Checks that those are the only
// differences from nlohmann's own parser.
inline std::optional<Json> ReadJson(const uint8_t* data, size_t size) {
  absl::StatusOr<Json> parsed = ParseJsonText(AsText(data, size), "input");
  const Json plain = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!parsed.ok()) {
    const bool too_deep = parsed.status().code() == absl::StatusCode::kOutOfRange;
    FUZZ_CHECK(too_deep || parsed.status().code() == absl::StatusCode::kInvalidArgument, "%s",
               parsed.status().ToString().c_str());
    FUZZ_CHECK(!parsed.status().message().empty(), "empty message");
    // Depth and duplicate keys are our own limits (nlohmann may accept such text); any other
    // refusal must be one nlohmann makes too.
    const bool ours = too_deep || absl::StrContains(parsed.status().message(), "duplicate key");
    FUZZ_CHECK(ours || plain.is_discarded(), "%s, but nlohmann accepted it",
               parsed.status().ToString().c_str());
    return std::nullopt;
  }
  FUZZ_CHECK(!plain.is_discarded() && plain == *parsed, "ParseJsonText differs from nlohmann");
  return *std::move(parsed);
}

// Whether a JSON number is exactly the integer x. nlohmann stores non-negative literals as
// unsigned and compares unsigned with signed by casting, so 2^64-1 would "equal" -1.
inline bool SameInteger(const Json& v, int64_t x) {
  if (v.is_number_unsigned()) return x >= 0 && v.get<uint64_t>() == static_cast<uint64_t>(x);
  if (v.is_number_integer()) return v.get<int64_t>() == x;
  return false;
}

// Errors from user input are InvalidArgument, NotFound, AlreadyExists, FailedPrecondition or
// OutOfRange; anything else (Internal, Unknown) means the core lost track of a case.
inline bool IsUserError(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

}  // namespace gpufleet::fuzz

#endif  // GPUFLEET_TESTS_FUZZ_FUZZ_UTIL_H_
