// Kubernetes quantity strings ("64", "500m", "16Gi", "1.5", "1e3") parsed once, at the edge,
// into integers in fixed units: milli-CPU for cpu, bytes for memory, plain counts otherwise.
#ifndef GPUFLEET_CORE_QUANTITY_H_
#define GPUFLEET_CORE_QUANTITY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpufleet {

// The value of a quantity scaled by `scale` (1 for bytes/counts, 1000 for milli-units), rounded up
// to an integer as Kubernetes does. Negative values, empty strings, unknown suffixes and overflow
// are errors whose message quotes the input.
absl::StatusOr<int64_t> ParseQuantityScaled(absl::string_view text, int64_t scale);

// Bytes, counts and percentages: "16Gi" -> 17179869184, "85198045184" -> 85198045184.
inline absl::StatusOr<int64_t> ParseQuantity(absl::string_view text) {
  return ParseQuantityScaled(text, 1);
}
// CPU in milli-cores: "64" -> 64000, "500m" -> 500, "0.5" -> 500.
inline absl::StatusOr<int64_t> ParseMilli(absl::string_view text) {
  return ParseQuantityScaled(text, 1000);
}

// Canonical strings for annotations: bytes as the largest exact binary suffix ("16Gi", "8138Mi"),
// milli-units as "500m" or "2".
std::string FormatBytes(int64_t bytes);
std::string FormatMilli(int64_t milli);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_QUANTITY_H_
