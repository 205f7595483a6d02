// Kubernetes quantity strings: parsing into fixed integer units and the canonical formatting used
// in annotations and snapshots.
#include "gpufleet/core/quantity.h"

#include <cstdint>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::GiB;
using test::IsError;
using test::MiB;

struct ParseCase {
  const char* text;
  int64_t bytes_or_count;  // ParseQuantity
  int64_t milli;           // ParseMilli
};

TEST(QuantityTest, ParsesTheFieldsVocabulary) {
  const ParseCase cases[] = {
      {"64", 64, 64000},
      {"500m", 1, 500},  // below one unit rounds up, as Kubernetes does
      {"16Gi", int64_t{16} << 30, (int64_t{16} << 30) * 1000},
      {"16276Mi", int64_t{16276} << 20, (int64_t{16276} << 20) * 1000},
      {"85198045184", 85198045184, 85198045184000},
      {"1.5Gi", int64_t{3} << 29, (int64_t{3} << 29) * 1000},
      {"1e3", 1000, 1000000},
      {"0.5", 1, 500},
      {"2k", 2000, 2000000},
      {"3M", 3000000, 3000000000},
      {"1Ki", 1024, 1024000},
      {"1Ti", int64_t{1} << 40, (int64_t{1} << 40) * 1000},
      {"+7", 7, 7000},
      {"0", 0, 0},
      {"1e-3", 1, 1},
      {"1E", 1000000000000000000, std::numeric_limits<int64_t>::max()},  // milli overflows
      {"7Ei", int64_t{7} << 60, std::numeric_limits<int64_t>::max()},
      {"1Pi", int64_t{1} << 50, (int64_t{1} << 50) * 1000},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<int64_t> q = ParseQuantity(c.text);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(*q, c.bytes_or_count);
    absl::StatusOr<int64_t> m = ParseMilli(c.text);
    if (c.milli == std::numeric_limits<int64_t>::max()) {
      EXPECT_TRUE(IsError(m, absl::StatusCode::kInvalidArgument, {"too large"}));
    } else {
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(*m, c.milli);
    }
  }
}

TEST(QuantityTest, RoundsFractionsUp) {
  EXPECT_EQ(ParseQuantity("1.1").value(), 2);
  EXPECT_EQ(ParseMilli("0.0001").value(), 1);
  EXPECT_EQ(ParseMilli("1.0005").value(), 1001);
  EXPECT_EQ(ParseQuantity("1.0").value(), 1);
  // Digits beyond the kept precision still count for rounding up.
  EXPECT_EQ(ParseQuantity("0.0000000000000001").value(), 1);
}

TEST(QuantityTest, RejectsBadStringsQuotingTheInput) {
  struct Bad {
    const char* text;
    const char* why;
  };
  const Bad cases[] = {
      {"", "empty"},
      {"abc", "no digits"},
      {"-1", "negative"},
      {"1.2.3", "unknown suffix"},
      {"5Qi", "unknown suffix \"Qi\""},
      {"9999999999999999999Ei", "too large"},
      {"9223372036854775808", "too large"},
      {"9Ei", "too large"},
      {"1e19", "too large"},
      {"1e+", "bad exponent"},
      {"1e3x", "bad exponent"},
      {".", "no digits"},
      {"Gi", "no digits"},
      {"1 Gi", "unknown suffix"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<int64_t> q = ParseQuantity(c.text);
    EXPECT_TRUE(IsError(q, absl::StatusCode::kInvalidArgument,
                        {std::string("\"") + c.text + "\"", c.why}));
  }
}

// Values whose intermediate product exceeds even 128 bits must be rejected, not wrap.
TEST(QuantityTest, HugeValuesWithScaleAndFractionAreTooLarge) {
  for (const char* text : {"9223372036854775807Ei", "9223372036854775807.999999999999Ei",
                           "9223372036854775807E", "9223372036854775807e18"}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(IsError(ParseMilli(text), absl::StatusCode::kInvalidArgument, {"too large"}));
    EXPECT_TRUE(IsError(ParseQuantity(text), absl::StatusCode::kInvalidArgument, {"too large"}));
  }
  EXPECT_EQ(ParseQuantity("9223372036854775807").value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ParseQuantity("7Ei").value(), int64_t{7} << 60);
}

TEST(QuantityTest, FormatsBytesWithTheLargestExactBinarySuffix) {
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatBytes(int64_t{16} << 30), "16Gi");
  EXPECT_EQ(FormatBytes(int64_t{16276} << 20), "16276Mi");
  EXPECT_EQ(FormatBytes(int64_t{80} << 30), "80Gi");
  EXPECT_EQ(FormatBytes(2048), "2Ki");
  EXPECT_EQ(FormatBytes(1536), "1536");
  EXPECT_EQ(FormatBytes(int64_t{3} << 29), "1536Mi");
  EXPECT_EQ(FormatBytes(85198045184), "83201216Ki");
  EXPECT_EQ(FormatBytes(int64_t{1} << 60), "1Ei");
}

TEST(QuantityTest, FormatsMilliAsCoresWhenWhole) {
  EXPECT_EQ(FormatMilli(0), "0");
  EXPECT_EQ(FormatMilli(500), "500m");
  EXPECT_EQ(FormatMilli(64000), "64");
  EXPECT_EQ(FormatMilli(1500), "1500m");
}

TEST(QuantityTest, FormatThenParseIsTheIdentity) {
  const int64_t values[] = {0,          1,          999,        1024,         1536,
                            MiB(8138),  GiB(16),    GiB(80),    85198045184,  123456789,
                            int64_t{1} << 62, std::numeric_limits<int64_t>::max()};
  for (int64_t v : values) {
    SCOPED_TRACE(v);
    EXPECT_EQ(ParseQuantity(FormatBytes(v)).value(), v);
  }
  for (int64_t milli : {0, 1, 500, 1000, 1500, 64000, 123456}) {
    SCOPED_TRACE(milli);
    EXPECT_EQ(ParseMilli(FormatMilli(milli)).value(), milli);
  }
}

}  // namespace
}  // namespace gpufleet
