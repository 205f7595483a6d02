// Kubernetes quantity strings ("64", "500m", "16Gi", "1.5", "1e3") parsed once, at the edge,
// into integers in fixed units: milli-CPU for cpu, bytes for memory, plain counts otherwise.
//
// The grammar is Kubernetes' (k8s.io/apimachinery resource.Quantity):
//   quantity := sign? number suffix        sign := "+" | "-"
//   number   := digits | digits "." digits? | "." digits
//   suffix   := "" | n | u | m | k | M | G | T | P | E          (powers of 1000)
//             | Ki | Mi | Gi | Ti | Pi | Ei                      (powers of 1024)
//             | ("e" | "E") sign? digits                         (a power of ten)
// with no whitespace anywhere. Like Kubernetes, a value is kept exactly down to 1n (1e-9) and a
// finer non-zero remainder rounds up to the next nano. The core adds its own bounds: a value must
// not be negative, must fit in int64 in its unit, and the text is at most kMaxQuantityLength long.
#ifndef GPUFLEET_CORE_QUANTITY_H_
#define GPUFLEET_CORE_QUANTITY_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpufleet {

inline constexpr size_t kMaxQuantityLength = 128;

// The value of a quantity scaled by `scale` (1 for bytes/counts, 1000 for milli-units), rounded up
// to an integer as Kubernetes' Value()/MilliValue() do. Negative values, empty strings, whitespace,
// unknown suffixes and overflow are errors whose message quotes the input.
absl::StatusOr<int64_t> ParseQuantityScaled(absl::string_view text, int64_t scale);

// Bytes, counts and percentages: "16Gi" -> 17179869184, "85198045184" -> 85198045184.
inline absl::StatusOr<int64_t> ParseQuantity(absl::string_view text) {
  return ParseQuantityScaled(text, 1);
}
// CPU in milli-cores: "64" -> 64000, "500m" -> 500, "0.5" -> 500.
inline absl::StatusOr<int64_t> ParseMilli(absl::string_view text) {
  return ParseQuantityScaled(text, 1000);
}

// The exact value as plain decimal text ("1.5", "1610612736", "0.000000001"), for callers that add
// quantities together before rounding (Kubernetes sums container requests exactly).
absl::StatusOr<std::string> ParseQuantityExact(absl::string_view text);

// A quantity's exact value, as Kubernetes keeps it: nano-units (a finer remainder rounded up to
// the next nano), at most int64 max in base units. `text` is what messages quote: the text it was
// read from, or the exact value for one computed by adding quantities.
struct Quantity {
  __int128 nanos = 0;
  std::string text;

  static Quantity Exact(__int128 nanos);  // text: the exact value, as ParseQuantityExact gives it
  bool zero() const { return nanos == 0; }
};

// Resource name -> its quantity, read once (a pod's requests, a container's limits).
using ResourceQuantities = std::map<std::string, Quantity>;

// The text read once into its exact value; errors as ParseQuantity's.
absl::StatusOr<Quantity> ReadQuantity(absl::string_view text);

// a + b exactly; "too large" past int64 in base units.
absl::StatusOr<Quantity> AddQuantities(const Quantity& a, const Quantity& b);

// Kubernetes accepts only whole numbers for extended resources (any name with a domain outside
// kubernetes.io, e.g. nvidia.com/gpu, koordinator.sh/gpu-core, aliyun.com/gpu-mem) and for pods.
bool IsIntegerResource(absl::string_view resource);

// A resource's quantity in the core's unit for it: milli-cores for "cpu", whole units for integer
// resources (a fraction such as "1.5" or "500m" is an error), bytes rounded up otherwise. The
// message names the resource and the value.
absl::StatusOr<int64_t> ParseResourceQuantity(absl::string_view resource, absl::string_view text);

// The same for a quantity already read: its value in the resource's unit, or the resource's rule
// broken (a fraction of a whole-number resource), the message quoting q.text.
absl::StatusOr<int64_t> ResourceValue(absl::string_view resource, const Quantity& q);

// A quantity read for `resource`: ReadQuantity, then the whole-number rule of integer resources
// checked (the message names the resource, as ParseResourceQuantity's does).
absl::StatusOr<Quantity> ReadResourceQuantity(absl::string_view resource, absl::string_view text);

// Canonical strings for annotations: bytes as the largest exact binary suffix ("16Gi", "8138Mi"),
// milli-units as "500m" or "2".
std::string FormatBytes(int64_t bytes);
std::string FormatMilli(int64_t milli);

}  // namespace gpufleet

#endif  // GPUFLEET_CORE_QUANTITY_H_
