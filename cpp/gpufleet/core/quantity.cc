#include "gpufleet/core/quantity.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpufleet {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("invalid quantity \"%s\": %s", text, why));
}

// value * mul with overflow detection.
bool MulOk(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

struct Suffix {
  const char* text;
  int64_t base;      // multiplier numerator
  int64_t divisor;   // for "m" (milli)
};

// Longest suffixes first so "Ki" is not read as "K".
constexpr Suffix kSuffixes[] = {
    {"Ki", int64_t{1} << 10, 1}, {"Mi", int64_t{1} << 20, 1}, {"Gi", int64_t{1} << 30, 1},
    {"Ti", int64_t{1} << 40, 1}, {"Pi", int64_t{1} << 50, 1}, {"Ei", int64_t{1} << 60, 1},
    {"k", 1000, 1}, {"M", 1000000, 1}, {"G", 1000000000, 1}, {"T", 1000000000000, 1},
    {"P", 1000000000000000, 1}, {"E", 1000000000000000000, 1}, {"m", 1, 1000}, {"", 1, 1},
};

}  // namespace

absl::StatusOr<int64_t> ParseQuantityScaled(absl::string_view text, int64_t scale) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s.empty()) return Bad(text, "empty");
  if (s[0] == '-') return Bad(text, "negative values are not allowed");
  if (s[0] == '+') s.remove_prefix(1);

  // Digits, optional fraction.
  size_t i = 0;
  int64_t integer = 0;
  int64_t fraction = 0;
  int64_t fraction_scale = 1;
  // Digits beyond the 12 kept are not exact; a nonzero one still rounds the result up (so
  // "0.0000000000001" is 1, never 0), which is exact unless a suffix scales it past one unit.
  bool dropped_nonzero = false;
  bool any_digit = false;
  while (i < s.size() && absl::ascii_isdigit(s[i])) {
    if (!MulOk(integer, 10, &integer) || __builtin_add_overflow(integer, s[i] - '0', &integer))
      return Bad(text, "too large");
    any_digit = true;
    ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && absl::ascii_isdigit(s[i])) {
      if (fraction_scale < 1000000000000LL) {  // 12 fractional digits are plenty
        fraction = fraction * 10 + (s[i] - '0');
        fraction_scale *= 10;
      } else if (s[i] != '0') {
        dropped_nonzero = true;
      }
      any_digit = true;
      ++i;
    }
  }
  if (!any_digit) return Bad(text, "no digits");
  absl::string_view suffix = s.substr(i);

  // Decimal exponent form: 1e3, 2E-1 is not allowed for integers below 1 after scaling.
  int64_t base = 1, divisor = 1;
  // "Ei" is the exbi suffix, not an exponent.
  if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1 &&
      suffix != "Ei") {
    absl::string_view exp = suffix.substr(1);
    bool neg = false;
    if (exp[0] == '+' || exp[0] == '-') {
      neg = exp[0] == '-';
      exp.remove_prefix(1);
    }
    if (exp.empty() || exp.size() > 2) return Bad(text, "bad exponent");
    int e = 0;
    for (char c : exp) {
      if (!absl::ascii_isdigit(c)) return Bad(text, "bad exponent");
      e = e * 10 + (c - '0');
    }
    if (e > 18) return Bad(text, "too large");
    for (int k = 0; k < e; ++k) (neg ? divisor : base) *= 10;
  } else {
    bool found = false;
    for (const Suffix& sx : kSuffixes) {
      if (suffix == sx.text) {
        base = sx.base;
        divisor = sx.divisor;
        found = true;
        break;
      }
    }
    if (!found) return Bad(text, absl::StrCat("unknown suffix \"", suffix, "\""));
  }

  // result = ceil((integer + fraction/fraction_scale) * base * scale / divisor), exact in
  // 128-bit; the products can exceed even that (an int64 mantissa times 2^60 times 1000), so
  // every step checks for overflow.
  __int128 mult, mantissa, numerator;
  if (__builtin_mul_overflow(static_cast<__int128>(base), static_cast<__int128>(scale), &mult) ||
      __builtin_mul_overflow(static_cast<__int128>(integer),
                             static_cast<__int128>(fraction_scale), &mantissa) ||
      __builtin_mul_overflow(mantissa + fraction, mult, &numerator))
    return Bad(text, "too large");
  __int128 denominator = static_cast<__int128>(fraction_scale) * divisor;
  __int128 value = numerator / denominator;
  if (numerator % denominator != 0 || dropped_nonzero) value += 1;  // Kubernetes rounds up
  if (value > kMax) return Bad(text, "too large");
  return static_cast<int64_t>(value);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kNames[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
  static constexpr int kShifts[] = {60, 50, 40, 30, 20, 10};
  if (bytes == 0) return "0";
  for (int k = 0; k < 6; ++k) {
    int64_t unit = int64_t{1} << kShifts[k];
    if (bytes % unit == 0) return absl::StrCat(bytes / unit, kNames[k]);
  }
  return absl::StrCat(bytes);
}

std::string FormatMilli(int64_t milli) {
  if (milli % 1000 == 0) return absl::StrCat(milli / 1000);
  return absl::StrCat(milli, "m");
}

}  // namespace gpufleet
