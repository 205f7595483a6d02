// Every resource vocabulary normalised to one DeviceRequest, and each of Koordinator's validation
// rules rejected with a message that names the rule (Koordinator's fine-grained device scheduling
// proposal, docs/proposals/scheduling/20220629-fine-grained-device-scheduling.md).
#include "gpufleet/core/request_parser.h"

#include <map>
#include <string>

#include "gpufleet/accounting/cluster_state.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::GiB;
using test::IsError;
using test::IsOk;
using test::MiB;

using Requests = std::map<std::string, std::string>;

absl::StatusOr<Pod> Parse(const Requests& r, const RequestParseOptions& options = {}) {
  Pod pod;
  pod.name = "p";
  absl::Status s = ParseRequests(r, &pod, options);
  if (!s.ok()) return s;
  return pod;
}

DeviceRequest Gpu(int count, int64_t core, int64_t ratio, int64_t bytes) {
  DeviceRequest r;
  r.type = kGpu;
  r.count = count;
  r.core = core;
  r.memory_ratio = ratio;
  r.memory_bytes = bytes;
  return r;
}

TEST(RequestParserTest, CpuMemoryAndNoDevices) {
  auto p = Parse({{"cpu", "500m"}, {"memory", "4Gi"}, {"pods", "1"}, {"ephemeral-storage", "1Gi"},
                  {"hugepages-2Mi", "2Mi"}, {"example.com/foo", "3"}});
  ASSERT_TRUE(IsOk(p));
  EXPECT_EQ(p->cpu_milli, 500);
  EXPECT_EQ(p->memory_bytes, GiB(4));
  EXPECT_TRUE(p->devices.empty());
}

TEST(RequestParserTest, NvidiaGpuIsWholeDevices) {
  auto p = Parse({{"nvidia.com/gpu", "2"}});
  ASSERT_TRUE(IsOk(p));
  ASSERT_EQ(p->devices.size(), 1u);
  EXPECT_EQ(p->devices[0], Gpu(2, 100, 100, 0));
  EXPECT_TRUE(p->devices[0].whole());
  EXPECT_DOUBLE_EQ(p->GpuShare(), 2.0);
}

TEST(RequestParserTest, KoordinatorGpuPercent) {
  auto half = Parse({{"koordinator.sh/gpu", "50"}});
  ASSERT_TRUE(IsOk(half));
  EXPECT_EQ(half->devices[0], Gpu(1, 50, 50, 0));
  EXPECT_FALSE(half->devices[0].whole());
  EXPECT_DOUBLE_EQ(half->GpuShare(), 0.5);

  auto one = Parse({{"koordinator.sh/gpu", "100"}});
  ASSERT_TRUE(IsOk(one));
  EXPECT_EQ(one->devices[0], Gpu(1, 100, 100, 0));
  EXPECT_TRUE(one->devices[0].whole());

  // Multi-GPU over 100: 200 means two whole GPUs.
  auto two = Parse({{"koordinator.sh/gpu", "200"}});
  ASSERT_TRUE(IsOk(two));
  EXPECT_EQ(two->devices[0], Gpu(2, 100, 100, 0));
}

TEST(RequestParserTest, RuleOverHundredMustBeMultipleOfHundred) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu", "150"}}), absl::StatusCode::kInvalidArgument,
                      {"koordinator.sh/gpu=150", "over 100 must be a multiple of 100"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-core", "150"},
                             {"koordinator.sh/gpu-memory-ratio", "150"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"gpu-core=150", "over 100 must be a multiple of 100"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-core", "200"},
                             {"koordinator.sh/gpu-memory-ratio", "250"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"gpu-memory-ratio=250", "over 100 must be a multiple of 100"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/rdma", "150"}}), absl::StatusCode::kInvalidArgument,
                      {"koordinator.sh/rdma=150", "multiple of 100"}));
}

TEST(RequestParserTest, RuleGpuCoreAloneIsInvalid) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-core", "50"}}),
                      absl::StatusCode::kInvalidArgument, {"gpu-core alone is invalid"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-core", "200"}}),
                      absl::StatusCode::kInvalidArgument, {"gpu-core alone is invalid"}));
}

TEST(RequestParserTest, GpuCoreWithMemoryOrRatio) {
  auto bytes = Parse({{"koordinator.sh/gpu-core", "50"}, {"koordinator.sh/gpu-memory", "8Gi"}});
  ASSERT_TRUE(IsOk(bytes));
  EXPECT_EQ(bytes->devices[0], Gpu(1, 50, 0, GiB(8)));

  auto ratio =
      Parse({{"koordinator.sh/gpu-core", "50"}, {"koordinator.sh/gpu-memory-ratio", "50"}});
  ASSERT_TRUE(IsOk(ratio));
  EXPECT_EQ(ratio->devices[0], Gpu(1, 50, 50, 0));

  auto two = Parse({{"koordinator.sh/gpu-core", "200"}, {"koordinator.sh/gpu-memory-ratio", "200"}});
  ASSERT_TRUE(IsOk(two));
  EXPECT_EQ(two->devices[0], Gpu(2, 100, 100, 0));
  EXPECT_TRUE(two->devices[0].whole());

  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-core", "300"},
                             {"koordinator.sh/gpu-memory-ratio", "200"}}),
                      absl::StatusCode::kInvalidArgument, {"different numbers of GPUs"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-core", "50"},
                             {"koordinator.sh/gpu-memory", "8Gi"},
                             {"koordinator.sh/gpu-memory-ratio", "50"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"gpu-memory and gpu-memory-ratio cannot both"}));
}

TEST(RequestParserTest, RuleNoMixingNvidiaWithKoordinator) {
  for (const char* koord : {"koordinator.sh/gpu", "koordinator.sh/gpu-core",
                            "koordinator.sh/gpu-memory-ratio", "koordinator.sh/gpu.shared"}) {
    SCOPED_TRACE(koord);
    EXPECT_TRUE(IsError(Parse({{"nvidia.com/gpu", "1"}, {koord, "100"}}),
                        absl::StatusCode::kInvalidArgument,
                        {"mixing nvidia.com/gpu with koordinator.sh"}));
  }
  EXPECT_TRUE(IsError(Parse({{"nvidia.com/gpu", "1"}, {"aliyun.com/gpu-mem", "100"}}),
                      absl::StatusCode::kInvalidArgument, {"mixing nvidia.com/gpu", "aliyun.com"}));
}

TEST(RequestParserTest, RuleNoMixingAliyunWithKoordinator) {
  EXPECT_TRUE(IsError(Parse({{"aliyun.com/gpu-mem", "8138"}, {"koordinator.sh/gpu", "50"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"mixing aliyun.com/gpu-mem with koordinator.sh"}));
  EXPECT_TRUE(IsError(Parse({{"aliyun.com/gpu-mem", "8138"},
                             {"koordinator.sh/gpu-memory", "1Gi"},
                             {"koordinator.sh/gpu-core", "10"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"mixing aliyun.com/gpu-mem with koordinator.sh"}));
}

TEST(RequestParserTest, KoordinatorGpuCannotCombineWithFineGrainedNames) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu", "50"}, {"koordinator.sh/gpu-core", "50"},
                             {"koordinator.sh/gpu-memory-ratio", "50"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"koordinator.sh/gpu cannot be combined"}));
}

TEST(RequestParserTest, GpuSharedSplitsEvenlyOverNDevices) {
  auto p = Parse({{"koordinator.sh/gpu.shared", "2"},
                  {"koordinator.sh/gpu-core", "100"},
                  {"koordinator.sh/gpu-memory-ratio", "100"}});
  ASSERT_TRUE(IsOk(p));
  EXPECT_EQ(p->devices[0], Gpu(2, 50, 50, 0));

  auto bytes = Parse({{"koordinator.sh/gpu.shared", "4"},
                      {"koordinator.sh/gpu-core", "200"},
                      {"koordinator.sh/gpu-memory", "16Gi"}});
  ASSERT_TRUE(IsOk(bytes));
  EXPECT_EQ(bytes->devices[0], Gpu(4, 50, 0, GiB(4)));
}

TEST(RequestParserTest, RuleGpuSharedMultiplesOfN) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "2"},
                             {"koordinator.sh/gpu-core", "75"},
                             {"koordinator.sh/gpu-memory-ratio", "100"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"gpu.shared=2", "multiples of 2"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "3"},
                             {"koordinator.sh/gpu-core", "90"},
                             {"koordinator.sh/gpu-memory-ratio", "100"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"gpu.shared=3", "multiples of 3"}));
}

TEST(RequestParserTest, RuleGpuSharedAtMostHundredTimesN) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "2"},
                             {"koordinator.sh/gpu-core", "400"},
                             {"koordinator.sh/gpu-memory-ratio", "200"}}),
                      absl::StatusCode::kInvalidArgument, {"gpu.shared=2", "at most 200"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "2"},
                             {"koordinator.sh/gpu-core", "200"},
                             {"koordinator.sh/gpu-memory-ratio", "202"}}),
                      absl::StatusCode::kInvalidArgument, {"gpu.shared=2", "at most 200"}));
}

TEST(RequestParserTest, GpuSharedAloneIsInvalid) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "2"}}),
                      absl::StatusCode::kInvalidArgument, {"gpu.shared needs"}));
}

// Absurd counts must be rejected, not truncated into a small or negative int.
TEST(RequestParserTest, HugeCountsAreRejected) {
  const Requests cases[] = {
      {{"nvidia.com/gpu", "4294967297"}},
      {{"koordinator.sh/gpu", "1e18"}},
      {{"koordinator.sh/gpu.shared", "1e18"}},
      {{"koordinator.sh/gpu.shared", "4294967296"}, {"koordinator.sh/gpu-memory", "4294967296"}},
      {{"koordinator.sh/rdma", "429496729600"}},
  };
  for (const Requests& r : cases) {
    SCOPED_TRACE(r.begin()->first + "=" + r.begin()->second);
    EXPECT_TRUE(IsError(Parse(r), absl::StatusCode::kInvalidArgument));
  }
}

TEST(RequestParserTest, MemoryRatioBecomesBytesOnTheChosenDevice) {
  auto p = Parse({{"koordinator.sh/gpu-core", "50"}, {"koordinator.sh/gpu-memory-ratio", "50"}});
  ASSERT_TRUE(IsOk(p));
  Device big, small;
  big.memory_bytes = GiB(80);
  small.memory_bytes = GiB(16);
  EXPECT_EQ(RequestBytesOn(p->devices[0], big), GiB(40));
  EXPECT_EQ(RequestBytesOn(p->devices[0], small), GiB(8));
  // Explicit bytes are the same on any card.
  DeviceRequest bytes = Gpu(1, 50, 0, GiB(3));
  EXPECT_EQ(RequestBytesOn(bytes, big), GiB(3));
  EXPECT_EQ(RequestBytesOn(bytes, small), GiB(3));
  // Ratios round up to whole bytes.
  Device odd;
  odd.memory_bytes = 1001;
  EXPECT_EQ(RequestBytesOn(Gpu(1, 10, 10, 0), odd), 101);
}

TEST(RequestParserTest, AliyunGpuMemInMiBOrGiB) {
  auto mib = Parse({{"aliyun.com/gpu-mem", "8138"}});
  ASSERT_TRUE(IsOk(mib));
  EXPECT_EQ(mib->devices[0], Gpu(1, 0, 0, MiB(8138)));

  RequestParseOptions gib;
  gib.gpushare_unit_bytes = GiB(1);
  auto g = Parse({{"aliyun.com/gpu-mem", "8"}}, gib);
  ASSERT_TRUE(IsOk(g));
  EXPECT_EQ(g->devices[0], Gpu(1, 0, 0, GiB(8)));

  EXPECT_TRUE(IsError(Parse({{"aliyun.com/gpu-mem", "9223372036854775807"}}),
                      absl::StatusCode::kInvalidArgument, {"aliyun.com/gpu-mem=9223372036854775807", "more memory than one GPU"}));
}

TEST(RequestParserTest, RdmaAndFpgaArePercentOfADevice) {
  auto p = Parse({{"koordinator.sh/rdma", "100"}, {"koordinator.sh/fpga", "200"},
                  {"koordinator.sh/gpu", "100"}});
  ASSERT_TRUE(IsOk(p));
  ASSERT_EQ(p->devices.size(), 3u);
  // Sorted by type: fpga, gpu, rdma.
  EXPECT_EQ(p->devices[0].type, kFpga);
  EXPECT_EQ(p->devices[0].count, 2);
  EXPECT_EQ(p->devices[0].core, 100);
  EXPECT_EQ(p->devices[1].type, kGpu);
  EXPECT_EQ(p->devices[2].type, kRdma);
  EXPECT_EQ(p->devices[2].count, 1);
  EXPECT_EQ(p->devices[2].core, 100);
  EXPECT_EQ(p->devices[2].memory_ratio, 0);
  ASSERT_NE(p->Find(kRdma), nullptr);
  EXPECT_EQ(p->Find("npu"), nullptr);

  auto half = Parse({{"koordinator.sh/rdma", "50"}});
  ASSERT_TRUE(IsOk(half));
  EXPECT_EQ(half->devices[0].count, 1);
  EXPECT_EQ(half->devices[0].core, 50);
}

TEST(RequestParserTest, UnknownResourceNameIsAnError) {
  EXPECT_TRUE(IsError(Parse({{"gpu", "1"}}), absl::StatusCode::kInvalidArgument,
                      {"unknown resource name \"gpu\""}));
  EXPECT_TRUE(IsError(Parse({{"cpus", "1"}}), absl::StatusCode::kInvalidArgument,
                      {"unknown resource name \"cpus\""}));
  // A misspelling inside a vocabulary we manage is caught; other domains are left alone.
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-cores", "50"}}),
                      absl::StatusCode::kInvalidArgument,
                      {"unknown resource name \"koordinator.sh/gpu-cores\""}));
  EXPECT_TRUE(IsOk(Parse({{"example.com/widget", "1"}})));
}

TEST(RequestParserTest, BadQuantitiesNameTheResource) {
  EXPECT_TRUE(IsError(Parse({{"cpu", "abc"}}), absl::StatusCode::kInvalidArgument,
                      {"request cpu", "\"abc\""}));
  EXPECT_TRUE(IsError(Parse({{"memory", "-1Gi"}}), absl::StatusCode::kInvalidArgument,
                      {"request memory", "negative"}));
  EXPECT_TRUE(IsError(Parse({{"nvidia.com/gpu", "x"}}), absl::StatusCode::kInvalidArgument,
                      {"request nvidia.com/gpu"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu-memory", "5Qi"}}),
                      absl::StatusCode::kInvalidArgument, {"request koordinator.sh/gpu-memory"}));
}

TEST(RequestParserTest, ErrorLeavesThePodUnchanged) {
  Pod pod;
  pod.name = "p";
  ASSERT_TRUE(IsOk(ParseRequests({{"cpu", "2"}, {"nvidia.com/gpu", "1"}}, &pod)));
  Pod before = pod;
  EXPECT_FALSE(ParseRequests({{"cpu", "4"}, {"koordinator.sh/gpu", "150"}}, &pod).ok());
  EXPECT_EQ(pod, before);
  EXPECT_FALSE(ParseRequests({{"cpu", "4"}, {"bogus", "1"}}, &pod).ok());
  EXPECT_EQ(pod, before);
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// Kubernetes accepts only whole numbers for extended resources: a fraction is an error naming the
// resource and the value, never rounded up into a larger request.
TEST(RequestParserStrictTest, ExtendedResourcesTakeWholeNumbersOnly) {
  const Requests cases[] = {
      {{"nvidia.com/gpu", "1.5"}},
      {{"nvidia.com/gpu", "500m"}},
      {{"koordinator.sh/gpu", "50.5"}},
      {{"koordinator.sh/gpu-core", "50.5"}, {"koordinator.sh/gpu-memory-ratio", "50"}},
      {{"koordinator.sh/gpu-core", "50"}, {"koordinator.sh/gpu-memory-ratio", "1500m"}},
      {{"koordinator.sh/gpu-core", "50"}, {"koordinator.sh/gpu-memory", "0.5"}},
      {{"koordinator.sh/gpu.shared", "1.5"}, {"koordinator.sh/gpu-core", "100"},
       {"koordinator.sh/gpu-memory-ratio", "100"}},
      {{"aliyun.com/gpu-mem", "1.5"}},
      {{"koordinator.sh/rdma", "0.5"}},
      {{"koordinator.sh/fpga", "100m"}},
      {{"example.com/widget", "2.5"}},
      {{"pods", "1.5"}},
  };
  for (const Requests& r : cases) {
    const auto& [name, value] = *r.begin();
    SCOPED_TRACE(name + "=" + value);
    // The message names the offending resource and quotes its value.
    bool named = false;
    auto parsed = Parse(r);
    ASSERT_FALSE(parsed.ok());
    for (const auto& [n, v] : r)
      named |= absl::StrContains(parsed.status().message(), "request " + n) &&
               absl::StrContains(parsed.status().message(), "\"" + v + "\"");
    EXPECT_TRUE(named) << parsed.status();
    EXPECT_TRUE(absl::StrContains(parsed.status().message(), "whole numbers only"))
        << parsed.status();
  }
  // Whole numbers in any spelling stay valid: exponents, suffixes, "2000m" = 2.
  auto two = Parse({{"nvidia.com/gpu", "2000m"}});
  ASSERT_TRUE(IsOk(two));
  EXPECT_EQ(two->devices[0].count, 2);
  auto memory = Parse({{"koordinator.sh/gpu-core", "50"}, {"koordinator.sh/gpu-memory", "1.5Gi"}});
  ASSERT_TRUE(IsOk(memory));
  EXPECT_EQ(memory->devices[0].memory_bytes, GiB(1) + GiB(1) / 2);
  EXPECT_TRUE(IsOk(Parse({{"koordinator.sh/gpu", "1e2"}})));
  // cpu and memory are not integer-only: they round up like Kubernetes.
  auto cpu = Parse({{"cpu", "0.0005"}, {"memory", "0.5"}});
  ASSERT_TRUE(IsOk(cpu));
  EXPECT_EQ(cpu->cpu_milli, 1);
  EXPECT_EQ(cpu->memory_bytes, 1);
}

TEST(RequestParserStrictTest, GpuSharedZeroIsInvalid) {
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "0"}, {"koordinator.sh/gpu-core", "50"},
                             {"koordinator.sh/gpu-memory-ratio", "50"}}),
                      absl::StatusCode::kInvalidArgument, {"koordinator.sh/gpu.shared=0"}));
  EXPECT_TRUE(IsError(Parse({{"koordinator.sh/gpu.shared", "0"}}),
                      absl::StatusCode::kInvalidArgument, {"koordinator.sh/gpu.shared=0"}));
}

TEST(RequestParserStrictTest, QuantitySyntaxErrorsNameResourceAndValue) {
  struct Case {
    const char* name;
    const char* value;
    const char* why;
  };
  const Case cases[] = {
      {"nvidia.com/gpu", " 1", "whitespace"},
      {"nvidia.com/gpu", "1 ", "whitespace"},
      {"nvidia.com/gpu", "-5", "negative"},
      {"nvidia.com/gpu", "", "empty"},
      {"nvidia.com/gpu", "1e100", "too large"},
      {"cpu", "1e100", "too large"},
      {"memory", "2x", "unknown suffix"},
      {"koordinator.sh/gpu-memory", "16GB", "unknown suffix"},
      {"example.com/widget", "lots", "no digits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    EXPECT_TRUE(IsError(Parse({{c.name, c.value}}), absl::StatusCode::kInvalidArgument,
                        {std::string("request ") + c.name, std::string("\"") + c.value + "\"", c.why}));
  }
}

// Counts beyond what a node may hold are errors with the bound in the message.
TEST(RequestParserStrictTest, CountsAndSizesAreBounded) {
  EXPECT_TRUE(IsError(Parse({{"nvidia.com/gpu", "1025"}}), absl::StatusCode::kInvalidArgument,
                      {"nvidia.com/gpu", "1025", "at most 1024"}));
  EXPECT_TRUE(IsOk(Parse({{"nvidia.com/gpu", "1024"}})));
  EXPECT_TRUE(IsError(Parse({{"cpu", "2e9"}}), absl::StatusCode::kInvalidArgument,
                      {"request cpu=2e9", "more than a node may have"}));
  EXPECT_TRUE(IsError(Parse({{"memory", "2Ei"}}), absl::StatusCode::kInvalidArgument,
                      {"request memory=2Ei"}));
  EXPECT_TRUE(IsError(Parse({{"aliyun.com/gpu-mem", "2147483648"}}),
                      absl::StatusCode::kInvalidArgument, {"aliyun.com/gpu-mem=2147483648"}));
}

}  // namespace
}  // namespace gpufleet
