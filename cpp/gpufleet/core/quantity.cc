#include "gpufleet/core/quantity.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpufleet {
namespace {

using Int128 = __int128;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr Int128 kNano = 1000000000;
// The largest value the core keeps (int64 max in base units), in nano-units.
constexpr Int128 kMaxNanos = static_cast<Int128>(kMax) * kNano;
// An exponent beyond this is certain to overflow or to round to 1n; reading stops growing it.
constexpr int64_t kExponentCap = 100000;

// The message quotes the input escaped, so a file's binary junk stays on one line.
absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("invalid quantity \"%s\": %s", absl::CEscape(text), why));
}

struct SuffixScale {
  const char* text;
  int exp10;
  int exp2;
};

constexpr SuffixScale kSuffixes[] = {
    {"", 0, 0},   {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},
    {"M", 6, 0},  {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

// Decimal digits (most significant first) times two, in place.
void Double(std::vector<int>& digits) {
  int carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int v = *it * 2 + carry;
    *it = v % 10;
    carry = v / 10;
  }
  if (carry) digits.insert(digits.begin(), carry);
}

// At most 38 digits, so the value fits in 128 bits.
Int128 ToInt128(const std::vector<int>& digits, size_t count) {
  Int128 v = 0;
  for (size_t k = 0; k < count; ++k) v = v * 10 + digits[k];
  return v;
}

// The exact value in nano-units, rounded up to a whole nano as Kubernetes does.
absl::StatusOr<Int128> ParseNanos(absl::string_view s) {
  if (s.empty()) return Bad(s, "empty");
  if (s.size() > kMaxQuantityLength)
    return Bad(absl::StrCat(s.substr(0, 32), "..."),
               absl::StrFormat("longer than %d characters", kMaxQuantityLength));
  for (char c : s)
    if (absl::ascii_isspace(static_cast<unsigned char>(c)))
      return Bad(s, "whitespace is not allowed");
  size_t i = 0;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    ++i;
  }
  std::vector<int> mantissa;  // integer and fraction digits together
  int64_t exp10 = 0;
  size_t digits = 0;
  for (; i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits)
    mantissa.push_back(s[i] - '0');
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]));
         ++i, ++digits) {
      mantissa.push_back(s[i] - '0');
      --exp10;
    }
  }
  if (digits == 0) return Bad(s, "no digits");
  const absl::string_view suffix = s.substr(i);
  int exp2 = 0;
  bool known = false;
  for (const SuffixScale& sx : kSuffixes) {
    if (suffix == sx.text) {
      exp10 += sx.exp10;
      exp2 = sx.exp2;
      known = true;
      break;
    }
  }
  if (!known && suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    absl::string_view e = suffix.substr(1);
    bool neg_exp = false;
    if (e[0] == '+' || e[0] == '-') {
      neg_exp = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty()) return Bad(s, absl::StrFormat("bad exponent \"%s\"", absl::CEscape(suffix)));
    int64_t exponent = 0;
    for (char c : e) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c)))
        return Bad(s, absl::StrFormat("bad exponent \"%s\"", absl::CEscape(suffix)));
      exponent = std::min(exponent * 10 + (c - '0'), kExponentCap);
    }
    exp10 += neg_exp ? -exponent : exponent;
    known = true;
  }
  if (!known) return Bad(s, absl::StrFormat("unknown suffix \"%s\"", absl::CEscape(suffix)));

  // Significant digits only: leading zeros go, trailing zeros move into the exponent.
  size_t lead = 0;
  while (lead < mantissa.size() && mantissa[lead] == 0) ++lead;
  mantissa.erase(mantissa.begin(), mantissa.begin() + lead);
  if (mantissa.empty()) return Int128{0};  // "0", "-0", "0.000Gi"
  while (mantissa.back() == 0) {
    mantissa.pop_back();
    ++exp10;
  }
  if (negative) return Bad(s, "negative values are not allowed");
  // The value is at least 10^(digits-1+exp10): from 10^19 on it is past int64 in any unit.
  if (static_cast<int64_t>(mantissa.size()) - 1 + exp10 >= 19) return Bad(s, "too large");
  for (int k = 0; k < exp2; ++k) Double(mantissa);
  // nanos = mantissa * 10^(exp10 + 9), rounded up.
  const int64_t shift = exp10 + 9;
  Int128 nanos;
  if (shift >= 0) {
    if (static_cast<int64_t>(mantissa.size()) + shift > 38) return Bad(s, "too large");
    nanos = ToInt128(mantissa, mantissa.size());
    for (int64_t k = 0; k < shift; ++k) nanos *= 10;
  } else if (static_cast<int64_t>(mantissa.size()) <= -shift) {
    nanos = 1;  // more than zero and less than one nano: rounds up to 1n
  } else {
    const size_t whole = mantissa.size() - static_cast<size_t>(-shift);
    if (whole > 38) return Bad(s, "too large");
    nanos = ToInt128(mantissa, whole);
    for (size_t k = whole; k < mantissa.size(); ++k) {
      if (mantissa[k] != 0) {
        nanos += 1;  // a finer non-zero remainder rounds up to the next nano
        break;
      }
    }
  }
  if (nanos > kMaxNanos) return Bad(s, "too large");
  return nanos;
}

std::string Int128Text(Int128 v) {
  if (v == 0) return "0";
  std::string out;
  for (; v > 0; v /= 10) out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return out;
}

// Value of exact nanos scaled by `scale`, rounded up as Kubernetes' Value()/MilliValue() do.
absl::StatusOr<int64_t> Scaled(Int128 nanos, int64_t scale, absl::string_view text) {
  if (scale <= 0) return absl::InvalidArgumentError("quantity scale must be positive");
  const Int128 scaled = nanos * scale;  // at most ~9.2e27 * scale: inside 128 bits for scale <= 1e9
  Int128 value = scaled / kNano;
  if (scaled % kNano != 0) value += 1;  // Kubernetes rounds up
  if (value > kMax) return Bad(text, "too large");
  return static_cast<int64_t>(value);
}

std::string ExactText(Int128 nanos) {
  std::string out = Int128Text(nanos / kNano);
  int64_t fraction = static_cast<int64_t>(nanos % kNano);
  if (fraction == 0) return out;
  std::string digits = absl::StrFormat("%09d", fraction);
  while (digits.back() == '0') digits.pop_back();
  return absl::StrCat(out, ".", digits);
}

}  // namespace

Quantity Quantity::Exact(Int128 nanos) { return Quantity{nanos, ExactText(nanos)}; }

absl::StatusOr<Quantity> ReadQuantity(absl::string_view text) {
  absl::StatusOr<Int128> nanos = ParseNanos(text);
  if (!nanos.ok()) return nanos.status();
  return Quantity{*nanos, std::string(text)};
}

absl::StatusOr<Quantity> AddQuantities(const Quantity& a, const Quantity& b) {
  const Int128 sum = a.nanos + b.nanos;  // each at most kMaxNanos: no overflow in 128 bits
  if (sum > kMaxNanos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s + %s is too large", absl::CEscape(a.text), absl::CEscape(b.text)));
  }
  return Quantity::Exact(sum);
}

absl::StatusOr<int64_t> ParseQuantityScaled(absl::string_view text, int64_t scale) {
  absl::StatusOr<Int128> nanos = ParseNanos(text);
  if (!nanos.ok()) return nanos.status();
  return Scaled(*nanos, scale, text);
}

absl::StatusOr<std::string> ParseQuantityExact(absl::string_view text) {
  absl::StatusOr<Int128> nanos = ParseNanos(text);
  if (!nanos.ok()) return nanos.status();
  return ExactText(*nanos);
}

bool IsIntegerResource(absl::string_view resource) {
  return resource == "pods" ||
         (absl::StrContains(resource, "/") && !absl::StrContains(resource, "kubernetes.io/"));
}

absl::StatusOr<int64_t> ResourceValue(absl::string_view resource, const Quantity& q) {
  auto with_name = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrCat(resource, ": ", s.message()));
  };
  absl::StatusOr<int64_t> value = Scaled(q.nanos, resource == "cpu" ? 1000 : 1, q.text);
  if (!value.ok()) return with_name(value.status());
  if (resource != "cpu" && IsIntegerResource(resource) && q.nanos % kNano != 0)
    return with_name(Bad(q.text, absl::StrFormat("%s takes whole numbers only", resource)));
  return value;
}

absl::StatusOr<Quantity> ReadResourceQuantity(absl::string_view resource, absl::string_view text) {
  absl::StatusOr<Quantity> q = ReadQuantity(text);
  if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat(resource, ": ", q.status().message()));
  absl::StatusOr<int64_t> value = ResourceValue(resource, *q);
  if (!value.ok()) return value.status();
  return q;
}

absl::StatusOr<int64_t> ParseResourceQuantity(absl::string_view resource, absl::string_view text) {
  absl::StatusOr<Quantity> q = ReadQuantity(text);
  if (!q.ok()) return absl::InvalidArgumentError(absl::StrCat(resource, ": ", q.status().message()));
  return ResourceValue(resource, *q);
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
