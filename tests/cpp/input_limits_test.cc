// Limits that keep hostile input from crashing the readers: JSON nesting depth for outside text
// (annotations, snapshots, parameter strings), per-device memory ratios in annotations, and
// integer fields that would otherwise wrap or convert a float with undefined behaviour. Each case was once a fuzzer finding
// (tests/fuzz/corpus/*/regress_*).
#include <limits>
#include <map>
#include <string>

#include "gpufleet/core/json_text.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/spec_json.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/io/snapshot.h"
#include "gpufleet/io/spec_json.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::IsError;
using test::IsOk;

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonTextTest, NestingUpToTheLimitParsesAndOneMoreIsOutOfRange) {
  absl::StatusOr<Json> at_limit = ParseJsonText(Nested(kMaxJsonDepth), "input");
  ASSERT_OK(at_limit);
  EXPECT_EQ(at_limit->dump(), Nested(kMaxJsonDepth));
  EXPECT_TRUE(IsError(ParseJsonText(Nested(kMaxJsonDepth + 1), "input"), absl::StatusCode::kOutOfRange,
                      {"input: nested deeper than 64 levels"}));
  // Deep enough to overflow the stack when copied (about 100000 levels in a release build).
  EXPECT_TRUE(IsError(ParseJsonText("{\"a\":" + Nested(200000) + "}", "input"),
                      absl::StatusCode::kOutOfRange));
}

TEST(JsonTextTest, SyntaxErrorsSayWhere) {
  EXPECT_TRUE(IsError(ParseJsonText("{\"a\": [1, 2}", "input"), absl::StatusCode::kInvalidArgument,
                      {"input: not JSON", "column 12"}));
  EXPECT_TRUE(IsError(ParseJsonText("", "input"), absl::StatusCode::kInvalidArgument, {"input: not JSON"}));
  // nlohmann reports a number beyond double as out_of_range rather than a parse error.
  EXPECT_TRUE(IsError(ParseJsonText("{\"a\": 5e5555}", "input"), absl::StatusCode::kInvalidArgument,
                      {"input: not JSON", "number overflow"}));
  // Unbalanced and deep: the depth limit stops it before the syntax error is reached.
  EXPECT_TRUE(IsError(ParseJsonText(Nested(100000).substr(1), "input"), absl::StatusCode::kOutOfRange));
}

TEST(InputLimitsTest, DeeplyNestedDeviceAllocatedAnnotationIsAnError) {
  Node node = test::MakeNode(
      R"({"name":"n","cpu":"8","memory":"8Gi","gpus":{"count":1,"memory":"16Gi"}})");
  Pod pod = test::MakePod(R"({"name":"ns/p","requests":{"koordinator.sh/gpu":"50"}})");
  const std::map<std::string, std::string> annotations = {
      {kDeviceAllocatedAnnotation,
       R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":)" + Nested(200000) +
           "}}]}"}};
  EXPECT_TRUE(IsError(GrantsFromAnnotations(annotations, node, pod),
                      absl::StatusCode::kInvalidArgument,
                      {"pod ns/p", kDeviceAllocatedAnnotation, "nested deeper than 64 levels"}));
}

TEST(InputLimitsTest, DeviceAllocatedMemoryRatioOver100IsAnError) {
  Node node = test::MakeNode(
      R"({"name":"n","cpu":"8","memory":"8Gi","gpus":{"count":1,"memory":"80Gi"}})");
  Pod pod = test::MakePod(R"({"name":"p","requests":{"koordinator.sh/gpu":"50"}})");
  auto grants = [&](const std::string& ratio) {
    return GrantsFromAnnotations(
        {{kDeviceAllocatedAnnotation,
          R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50",)"
          R"("koordinator.sh/gpu-memory-ratio":")" + ratio + R"("}}]})"}},
        node, pod);
  };
  absl::StatusOr<std::vector<DeviceGrant>> full = grants("100");
  ASSERT_OK(full);
  EXPECT_EQ(full->at(0).memory_bytes, int64_t{80} << 30);
  // 1e9 x 80Gi overflowed int64 before the check.
  EXPECT_TRUE(IsError(grants("1e9"), absl::StatusCode::kInvalidArgument,
                      {"koordinator.sh/gpu-memory-ratio 1000000000 of gpu 0 is over 100"}));
  EXPECT_TRUE(IsError(grants("101"), absl::StatusCode::kInvalidArgument, {"over 100"}));
}

TEST(InputLimitsTest, SnapshotAndParameterStringsAreDepthLimited) {
  EXPECT_TRUE(IsError(LoadSnapshot(R"({"version":1,"nodes":)" + Nested(200000) + "}"),
                      absl::StatusCode::kOutOfRange, {"snapshot: nested deeper than 64 levels"}));
  EXPECT_TRUE(IsError(ParseSpec("allocate(a=" + Nested(kMaxJsonDepth + 1) + ")"),
                      absl::StatusCode::kInvalidArgument, {"a: nested deeper than 64"}));
  absl::StatusOr<std::pair<std::string, Json>> shallow =
      ParseSpec("allocate(a=" + Nested(3) + ", b=word)");
  ASSERT_OK(shallow);
  EXPECT_EQ(shallow->second.dump(), R"({"a":[[[]]],"b":"word"})");
}

TEST(InputLimitsTest, GpuShorthandCountIsBounded) {
  // Two billion devices were built one by one before validation.
  EXPECT_TRUE(IsError(NodeFromJson(Json::parse(
                          R"({"name":"n","gpus":{"count":2000000000,"memory":"1Gi"}})")),
                      absl::StatusCode::kInvalidArgument,
                      {"node n gpus: count: 2000000000 GPUs", "more than the 1024 devices"}));
  absl::StatusOr<Node> big =
      NodeFromJson(Json::parse(R"({"name":"n","gpus":{"count":1024,"memory":"1Gi"}})"));
  ASSERT_OK(big);
  EXPECT_EQ(big->devices.size(), 1024u);
}

TEST(InputLimitsTest, IntegerFieldsOutOfRangeAreErrorsNotWrapped) {
  // nlohmann reads 2^64-1 as unsigned; narrowing it gave -1, and 2^32 gave 0 in an int.
  EXPECT_TRUE(IsError(PodFromJson(Json::parse(R"({"name":"p","priority":18446744073709551615})")),
                      absl::StatusCode::kInvalidArgument, {"pod p: priority"}));
  EXPECT_TRUE(IsError(
      NodeFromJson(Json::parse(
          R"({"name":"n","devices":[{"type":"gpu","minor":18446744073709551615,"memory":"1Gi"}]})")),
      absl::StatusCode::kInvalidArgument, {"minor"}));
  for (const char* job : {R"({"name":"j","replicas":1,"priority":4294967296})",
                          R"({"name":"j","replicas":1,"priority":18446744073709551615})",
                          R"({"name":"j","replicas":1,"min_available":4294967296})",
                          R"({"name":"j","replicas":18446744073709551615})",
                          R"({"name":"j","replicas":1,"creation":18446744073709551615})"})
    EXPECT_TRUE(IsError(engine::JobFromJson(Json::parse(job)), absl::StatusCode::kInvalidArgument,
                        {"job j", "must be <="}))
        << job;
  absl::StatusOr<engine::Job> top = engine::JobFromJson(
      Json::parse(R"({"name":"j","replicas":1,"priority":2147483647,"min_available":1})"));
  ASSERT_OK(top);
  EXPECT_EQ(top->priority, std::numeric_limits<int>::max());
}

TEST(InputLimitsTest, IntegerParametersRejectFloatsAndOutOfRange) {
  // get<int>() on 1e47 was undefined behaviour; 2^32 wrapped to 0.
  const Json params = Json::parse(R"({"big":1e47,"half":1.5,"wide":4294967296,"neg":-1,"ok":7})");
  EXPECT_TRUE(IsError(Param<int>(params, "reservation", "big", 3),
                      absl::StatusCode::kInvalidArgument,
                      {"reservation: parameter \"big\" has the wrong type", "1e+47",
                       "expected an integer"}));
  EXPECT_TRUE(IsError(Param<int>(params, "x", "half", 3), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(IsError(Param<int>(params, "x", "wide", 3), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(IsError(Param<uint64_t>(params, "x", "neg", 3), absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(*Param<int>(params, "x", "ok", 3), 7);
  EXPECT_EQ(*Param<int>(params, "x", "absent", 3), 3);
  EXPECT_EQ(*Param<double>(params, "x", "big", 3), 1e47);
}

TEST(InputLimitsTest, FloatsWhereIntegersBelongAreErrors) {
  EXPECT_TRUE(IsError(
      NodeFromJson(Json::parse(
          R"({"name":"n","gpus":{"count":2,"memory":"1Gi"},"nvlink_groups":[[0,1e47]]})")),
      absl::StatusCode::kInvalidArgument, {"node n: nvlink_groups"}));
  EXPECT_TRUE(IsError(
      LoadSnapshot(R"({"version":1,"nodes":[{"name":"n","cpu":"1","memory":"1Gi"}],)"
                   R"("allocations":[{"pod":"a","node":"n","cpu_milli":1e47,"memory_bytes":0,)"
                   R"("state":"Bound","assume_time_ns":1,"devices":[]}]})"),
      absl::StatusCode::kInvalidArgument, {"snapshot: malformed allocation", "cpu_milli"}));
}

}  // namespace
}  // namespace gpufleet
