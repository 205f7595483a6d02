// Kubernetes quantity strings: any bytes either parse to a non-negative integer or give an error
// quoting the input. A parsed value survives the canonical formatters (FormatBytes, FormatMilli),
// and the byte and milli readings of one string agree up to Kubernetes' rounding up.
#include <cstdint>

#include "fuzz_util.h"
#include "gpufleet/core/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpufleet;
  const absl::string_view text = fuzz::AsText(data, size);
  absl::StatusOr<int64_t> plain = ParseQuantity(text);
  absl::StatusOr<int64_t> milli = ParseMilli(text);
  for (const absl::StatusOr<int64_t>* v : {&plain, &milli}) {
    if (v->ok()) {
      FUZZ_CHECK(**v >= 0, "value %lld", static_cast<long long>(**v));
    } else {
      FUZZ_CHECK(v->status().code() == absl::StatusCode::kInvalidArgument, "code %d",
                 static_cast<int>(v->status().code()));
      FUZZ_CHECK(!v->status().message().empty(), "empty message");
    }
  }
  if (plain.ok()) {
    absl::StatusOr<int64_t> again = ParseQuantity(FormatBytes(*plain));
    FUZZ_CHECK(again.ok() && *again == *plain, "FormatBytes(%lld) = %s does not read back",
               static_cast<long long>(*plain), FormatBytes(*plain).c_str());
  }
  if (milli.ok()) {
    absl::StatusOr<int64_t> again = ParseMilli(FormatMilli(*milli));
    FUZZ_CHECK(again.ok() && *again == *milli, "FormatMilli(%lld) = %s does not read back",
               static_cast<long long>(*milli), FormatMilli(*milli).c_str());
  }
  // Both round up: ceil(1000 x) lies in (1000 (ceil(x) - 1), 1000 ceil(x)].
  if (plain.ok() && milli.ok() && *plain <= INT64_MAX / 1000) {
    FUZZ_CHECK(*milli <= *plain * 1000 && *milli > (*plain - 1) * 1000,
               "\"%.*s\": %lld units but %lld milli-units", static_cast<int>(size),
               text.data(), static_cast<long long>(*plain), static_cast<long long>(*milli));
  }
  return 0;
}
