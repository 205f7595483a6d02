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
      {"1 Gi", "whitespace is not allowed"},
      {" 1", "whitespace is not allowed"},
      {"1 ", "whitespace is not allowed"},
      {"-5", "negative"},
      {"1e", "unknown suffix \"e\""},
      {"1Ki5", "unknown suffix"},
      {"1.5.", "unknown suffix"},
      {"1e100", "too large"},
      {"1e99999999999999999999", "too large"},
      {"+", "no digits"},
      {"1ki", "unknown suffix \"ki\""},
      {"0x10", "unknown suffix \"x10\""},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<int64_t> q = ParseQuantity(c.text);
    EXPECT_TRUE(IsError(q, absl::StatusCode::kInvalidArgument,
                        {std::string("\"") + c.text + "\"", c.why}));
  }
}

// Control characters and binary junk are quoted escaped, so an error stays on one line.
TEST(QuantityTest, JunkIsQuotedOnOneLine) {
  for (absl::string_view text : {absl::string_view("1\n"), absl::string_view("\x01\xff", 2),
                                 absl::string_view("4\0Gi", 4)}) {
    auto q = ParseQuantity(text);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().message().find('\n'), absl::string_view::npos) << q.status();
    EXPECT_EQ(q.status().message().find('\0'), absl::string_view::npos) << q.status();
  }
  std::string long_text(kMaxQuantityLength + 1, '1');
  EXPECT_TRUE(IsError(ParseQuantity(long_text), absl::StatusCode::kInvalidArgument,
                      {"longer than 128 characters"}));
}

// Kubernetes keeps a quantity to the nano and rounds a finer remainder up; the scaled integers
// follow from that exact value.
TEST(QuantityTest, ExactValueToTheNano) {
  EXPECT_EQ(ParseQuantityExact("1.5").value(), "1.5");
  EXPECT_EQ(ParseQuantityExact("1.5Gi").value(), "1610612736");
  EXPECT_EQ(ParseQuantityExact("100n").value(), "0.0000001");
  EXPECT_EQ(ParseQuantityExact("0.9n").value(), "0.000000001");
  EXPECT_EQ(ParseQuantityExact("1e-20").value(), "0.000000001");
  EXPECT_EQ(ParseQuantityExact("0.0000000005Ki").value(), "0.000000512");  // exact, not 513n
  EXPECT_EQ(ParseQuantityExact("250m").value(), "0.25");
  EXPECT_EQ(ParseQuantityExact("0.000Gi").value(), "0");
  EXPECT_EQ(ParseQuantityExact("-0").value(), "0");
  EXPECT_EQ(ParseQuantityExact("5.").value(), "5");
  EXPECT_EQ(ParseQuantityExact(".5").value(), "0.5");
  EXPECT_EQ(ParseQuantityExact("1E3").value(), "1000");
  EXPECT_EQ(ParseQuantityExact("12e-1").value(), "1.2");
  EXPECT_EQ(ParseQuantityExact("0000000000000000000000000000001").value(), "1");
  EXPECT_EQ(ParseQuantityExact("9223372036854775807").value(), "9223372036854775807");
  EXPECT_TRUE(IsError(ParseQuantityExact("9223372036854775808"), absl::StatusCode::kInvalidArgument,
                      {"too large"}));
  EXPECT_EQ(ParseQuantity("1.0000000001").value(), 2);
  EXPECT_EQ(ParseMilli("0.1n").value(), 1);
}

TEST(QuantityTest, ResourcesKeepKubernetesRules) {
  EXPECT_TRUE(IsIntegerResource("nvidia.com/gpu"));
  EXPECT_TRUE(IsIntegerResource("koordinator.sh/gpu.shared"));
  EXPECT_TRUE(IsIntegerResource("aliyun.com/gpu-mem"));
  EXPECT_TRUE(IsIntegerResource("pods"));
  EXPECT_FALSE(IsIntegerResource("cpu"));
  EXPECT_FALSE(IsIntegerResource("memory"));
  EXPECT_FALSE(IsIntegerResource("kubernetes.io/batch-cpu"));
  EXPECT_EQ(ParseResourceQuantity("cpu", "1.5").value(), 1500);
  EXPECT_EQ(ParseResourceQuantity("memory", "0.5").value(), 1);
  EXPECT_EQ(ParseResourceQuantity("nvidia.com/gpu", "2000m").value(), 2);
  EXPECT_EQ(ParseResourceQuantity("koordinator.sh/gpu-memory", "1.5Gi").value(), GiB(1) + GiB(1) / 2);
  for (const char* bad : {"1.5", "500m", "1.0000000001", "1n"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(IsError(ParseResourceQuantity("nvidia.com/gpu", bad),
                        absl::StatusCode::kInvalidArgument,
                        {"nvidia.com/gpu", std::string("\"") + bad + "\"", "whole numbers only"}));
  }
  EXPECT_TRUE(IsError(ParseResourceQuantity("nvidia.com/gpu", "-5"),
                      absl::StatusCode::kInvalidArgument, {"nvidia.com/gpu: ", "\"-5\"", "negative"}));
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
