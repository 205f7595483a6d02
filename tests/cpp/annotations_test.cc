// Allocation records as pod annotations and back: Koordinator's
// scheduling.koordinator.sh/device-allocated (device type -> [{minor, resources}]) and gpushare's
// ALIYUN_COM_GPU_MEM_{IDX,POD,DEV,ASSIGNED,ASSUME_TIME}; restart safety by rebuilding the
// accounting from bound pods' annotations.
#include "gpufleet/io/annotations.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::CheckedCluster;
using test::GiB;
using test::IsError;
using test::IsOk;
using test::MakeAllocation;
using test::MakeNode;
using test::MakePod;
using test::MiB;
using Annotations = std::map<std::string, std::string>;

constexpr char kH100Node[] =
    R"({"name":"n","cpu":"64","memory":"512Gi","devices":[
        {"type":"gpu","minor":0,"model":"H100","memory":"80Gi"},
        {"type":"gpu","minor":1,"model":"H100","memory":"80Gi"},
        {"type":"gpu","minor":2,"model":"H100","memory":"80Gi"},
        {"type":"gpu","minor":3,"model":"H100","memory":"80Gi"},
        {"type":"rdma","minor":0}]})";
constexpr char kGpushareNode[] =
    R"({"name":"g","cpu":"32","memory":"64Gi","gpus":{"count":4,"memory":"16276Mi"}})";

TEST(AnnotationsTest, RendersKoordinatorDeviceAllocatedExactly) {
  Node node = MakeNode(kH100Node);
  Allocation whole = MakeAllocation(
      R"({"pod":"p","node":"n","devices":[{"minor":0,"core":100,"memory":"80Gi"},
                                          {"minor":1,"core":100,"memory":"80Gi"}]})");
  EXPECT_EQ(DeviceAllocatedJson(whole, node),
            R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"100",)"
            R"("koordinator.sh/gpu-memory":"80Gi","koordinator.sh/gpu-memory-ratio":"100"}},)"
            R"({"minor":1,"resources":{"koordinator.sh/gpu-core":"100",)"
            R"("koordinator.sh/gpu-memory":"80Gi","koordinator.sh/gpu-memory-ratio":"100"}}]})");

  Allocation shared = MakeAllocation(
      R"({"pod":"q","node":"n","devices":[{"minor":2,"core":25,"memory":"20Gi"},
                                          {"type":"rdma","minor":0,"core":50}]})");
  EXPECT_EQ(DeviceAllocatedJson(shared, node),
            R"({"gpu":[{"minor":2,"resources":{"koordinator.sh/gpu-core":"25",)"
            R"("koordinator.sh/gpu-memory":"20Gi","koordinator.sh/gpu-memory-ratio":"25"}}],)"
            R"("rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"50"}}]})");

  Allocation none = MakeAllocation(R"({"pod":"c","node":"n","cpu":"1"})");
  EXPECT_EQ(DeviceAllocatedJson(none, node), "{}");
}

TEST(AnnotationsTest, MemoryRatioRoundsUp) {
  Node node = MakeNode(kGpushareNode);
  Allocation a = MakeAllocation(R"({"pod":"p","node":"g","devices":[{"minor":1,"memory":"1000Mi"}]})");
  // 1000 / 16276 = 6.1% -> 7.
  EXPECT_NE(DeviceAllocatedJson(a, node).find(R"("koordinator.sh/gpu-memory-ratio":"7")"),
            std::string::npos)
      << DeviceAllocatedJson(a, node);
}

TEST(AnnotationsTest, RendersGpushareKeys) {
  Node node = MakeNode(kGpushareNode);
  Allocation a = MakeAllocation(R"({"pod":"p","node":"g","devices":[{"minor":1,"memory":"8138Mi"}]})");
  a.assume_time_ns = 1600000000123456789;
  Annotations out = AllocationAnnotations(a, node, /*gpushare=*/true);
  EXPECT_EQ(out.size(), 6u);
  EXPECT_EQ(out[kGpushareIdx], "1");
  EXPECT_EQ(out[kGpusharePod], "8138");
  EXPECT_EQ(out[kGpushareDev], "16276");
  EXPECT_EQ(out[kGpushareAssigned], "false");
  EXPECT_EQ(out[kGpushareAssumeTime], "1600000000123456789");
  EXPECT_EQ(out[kDeviceAllocatedAnnotation], DeviceAllocatedJson(a, node));

  Annotations gib = AllocationAnnotations(a, node, true, GiB(1));
  EXPECT_EQ(gib[kGpusharePod], "7");  // 8138 MiB in whole GiB
  EXPECT_EQ(gib[kGpushareDev], "15");

  Annotations koord_only = AllocationAnnotations(a, node, /*gpushare=*/false);
  EXPECT_EQ(koord_only.size(), 1u);
  EXPECT_EQ(koord_only.count(kDeviceAllocatedAnnotation), 1u);

  Allocation cpu_only = MakeAllocation(R"({"pod":"c","node":"g","cpu":"1"})");
  EXPECT_EQ(AllocationAnnotations(cpu_only, node, true).size(), 1u);
}

TEST(AnnotationsTest, MemoryUnitMustBePositive) {
  Node node = MakeNode(kGpushareNode);
  Allocation a = MakeAllocation(R"({"pod":"p","node":"g","devices":[{"minor":1,"memory":"8138Mi"}]})");
  Pod pod = MakePod(R"({"name":"p","requests":{"aliyun.com/gpu-mem":"8138"}})");
  const Annotations recorded = {{kGpushareIdx, "1"}, {kGpusharePod, "8138"}};
  for (int64_t unit : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    EXPECT_TRUE(IsError(CheckUnitBytes(unit), absl::StatusCode::kInvalidArgument, {"unit_bytes"}));
    // No division by it, no negative counts: only Koordinator's key is written.
    Annotations out = AllocationAnnotations(a, node, /*gpushare=*/true, unit);
    EXPECT_EQ(out.size(), 1u);
    EXPECT_EQ(out.count(kDeviceAllocatedAnnotation), 1u);
    EXPECT_TRUE(IsError(GrantsFromAnnotations(recorded, node, pod, unit),
                        absl::StatusCode::kInvalidArgument, {"unit_bytes must be a positive"}));
  }
  EXPECT_TRUE(CheckUnitBytes(1).ok());
}

TEST(AnnotationsTest, GrantsParseBackFromKoordinatorAnnotation) {
  Node node = MakeNode(kH100Node);
  Pod pod = MakePod(R"({"name":"p","requests":{"koordinator.sh/gpu":"200"}})");
  Allocation a = MakeAllocation(
      R"({"pod":"p","node":"n","devices":[{"minor":0,"core":100,"memory":"80Gi"},
                                          {"minor":3,"core":30,"memory":"10Gi"},
                                          {"type":"rdma","minor":0,"core":100}]})");
  auto grants = GrantsFromAnnotations(AllocationAnnotations(a, node, true), node, pod);
  ASSERT_TRUE(IsOk(grants));
  EXPECT_EQ(*grants, a.devices);

  // Ratio without bytes becomes bytes of that card; JSON numbers are accepted as quantities.
  Annotations ratio = {{kDeviceAllocatedAnnotation,
                        R"({"gpu":[{"minor":2,"resources":{"koordinator.sh/gpu-core":50,)"
                        R"("koordinator.sh/gpu-memory-ratio":"50"}}]})"}};
  auto g = GrantsFromAnnotations(ratio, node, pod);
  ASSERT_TRUE(IsOk(g));
  ASSERT_EQ(g->size(), 1u);
  EXPECT_EQ((*g)[0], (DeviceGrant{"gpu", 2, 50, GiB(40)}));
}

TEST(AnnotationsTest, GrantsParseBackFromGpushareAnnotations) {
  Node node = MakeNode(kGpushareNode);
  Pod pod = MakePod(R"({"name":"p","requests":{"aliyun.com/gpu-mem":"8138"}})");
  auto one = GrantsFromAnnotations({{kGpushareIdx, "1"}, {kGpusharePod, "8138"}}, node, pod);
  ASSERT_TRUE(IsOk(one));
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0], (DeviceGrant{"gpu", 1, 0, MiB(8138)}));

  auto two = GrantsFromAnnotations({{kGpushareIdx, "0,3"}, {kGpusharePod, "8000"}}, node, pod);
  ASSERT_TRUE(IsOk(two));
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1], (DeviceGrant{"gpu", 3, 0, MiB(4000)}));

  auto gib = GrantsFromAnnotations({{kGpushareIdx, "2"}, {kGpusharePod, "4"}}, node, pod, GiB(1));
  ASSERT_TRUE(IsOk(gib));
  EXPECT_EQ((*gib)[0].memory_bytes, GiB(4));

  // Koordinator's key wins when both are present.
  auto both = GrantsFromAnnotations(
      {{kGpushareIdx, "0"}, {kGpusharePod, "100"},
       {kDeviceAllocatedAnnotation,
        R"({"gpu":[{"minor":2,"resources":{"koordinator.sh/gpu-memory":"200Mi"}}]})"}},
      node, pod);
  ASSERT_TRUE(IsOk(both));
  EXPECT_EQ((*both)[0], (DeviceGrant{"gpu", 2, 0, MiB(200)}));
}

TEST(AnnotationsTest, MalformedAnnotationsAreErrorsNamingPodAndKey) {
  Node node = MakeNode(kH100Node);
  Pod pod = MakePod(R"({"name":"ns/p","requests":{"nvidia.com/gpu":"1"}})");
  struct Case {
    Annotations annotations;
    std::vector<std::string> parts;
  };
  const std::string koord = kDeviceAllocatedAnnotation;
  const Case cases[] = {
      {{{koord, "{"}}, {"pod ns/p", koord, "not JSON", "parse error"}},
      {{{koord, "[]"}}, {"not a JSON object"}},
      {{{koord, R"({"gpu":{"minor":0}})"}}, {"gpu is not a list"}},
      {{{koord, R"({"gpu":[{"resources":{}}]})"}}, {"no integer minor"}},
      {{{koord, R"({"gpu":[{"minor":"0"}]})"}}, {"no integer minor"}},
      {{{koord, R"({"gpu":[{"minor":9}]})"}}, {"node n has no gpu 9"}},
      {{{koord, R"({"gpu":[{"minor":4294967296}]})"}}, {"minor 4294967296 is out of range"}},
      {{{koord, R"({"gpu":[{"minor":-1}]})"}}, {"minor -1 is out of range"}},
      {{{koord, R"({"fpga":[{"minor":0}]})"}}, {"node n has no fpga 0"}},
      {{{koord, R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"abc"}}]})"}},
       {"\"abc\""}},
      {{{koord, R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-memory":{"a":1}}}]})"}},
       {"koordinator.sh/gpu-memory: expected a quantity"}},
      {{{kGpushareIdx, "0"}}, {kGpusharePod, "missing"}},
      {{{kGpushareIdx, "0"}, {kGpusharePod, "x"}}, {kGpusharePod, "\"x\"", "no digits"}},
      {{{kGpushareIdx, "0"}, {kGpusharePod, "-5"}}, {kGpusharePod, "\"-5\"", "negative"}},
      {{{kGpushareIdx, "a"}, {kGpusharePod, "5"}}, {kGpushareIdx, "\"a\" is not a minor"}},
      {{{kGpushareIdx, "7"}, {kGpusharePod, "5"}}, {"node n has no gpu 7"}},
      {{{kGpushareIdx, ","}, {kGpusharePod, "5"}}, {kGpushareIdx, "empty"}},
      {{{kGpushareIdx, "0"}, {kGpusharePod, "99999999999999999"}}, {kGpusharePod, "too large"}},
      {{}, {"pod ns/p requests devices but carries no", koord, kGpushareIdx}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.annotations.empty() ? "none" : c.annotations.begin()->second);
    EXPECT_TRUE(IsError(GrantsFromAnnotations(c.annotations, node, pod),
                        absl::StatusCode::kInvalidArgument, c.parts));
  }
  // A pod without device requests needs no annotation.
  auto none = GrantsFromAnnotations({}, node, MakePod(R"({"name":"cpu-only"})"));
  ASSERT_TRUE(IsOk(none));
  EXPECT_TRUE(none->empty());
}

TEST(AnnotationsTest, RestoreRebuildsExactlyTheRecordedDevices) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kH100Node));
  Pod pod = MakePod(R"({"name":"p","requests":{"cpu":"2","nvidia.com/gpu":"1"}})");
  // binpack would take gpu0; the record says gpu3, and a restore must not choose again.
  Annotations recorded = {{kDeviceAllocatedAnnotation,
                           R"({"gpu":[{"minor":3,"resources":{"koordinator.sh/gpu-core":"100",)"
                           R"("koordinator.sh/gpu-memory":"80Gi"}}]})"}};
  auto a = RestoreBoundPod(c.state(), pod, "n", recorded);
  ASSERT_TRUE(IsOk(a));
  EXPECT_OK(c.state().CheckInvariants());
  EXPECT_EQ(a->state, AllocationState::kBound);
  EXPECT_EQ(a->cpu_milli, 2000);
  ASSERT_EQ(a->devices.size(), 1u);
  EXPECT_EQ(a->devices[0], (DeviceGrant{"gpu", 3, 100, GiB(80)}));
  EXPECT_EQ(c.state().used_core()[3], 100);
  EXPECT_EQ(c.state().used_core()[0], 0);

  // A second pod claiming the same card would over-commit it: refused, state unchanged.
  const ClusterState before = c.state();
  Pod other = MakePod(R"({"name":"q","requests":{"koordinator.sh/gpu":"50"}})");
  Annotations clash = {{kDeviceAllocatedAnnotation,
                        R"({"gpu":[{"minor":3,"resources":{"koordinator.sh/gpu-core":"50",)"
                        R"("koordinator.sh/gpu-memory-ratio":"50"}}]})"}};
  EXPECT_TRUE(IsError(RestoreBoundPod(c.state(), other, "n", clash),
                      absl::StatusCode::kFailedPrecondition, {"over-commit gpu 3"}));
  EXPECT_EQ(c.state(), before);
  EXPECT_TRUE(IsError(RestoreBoundPod(c.state(), pod, "n", recorded),
                      absl::StatusCode::kAlreadyExists, {"pod p"}));
  EXPECT_TRUE(IsError(RestoreBoundPod(c.state(), other, "gone", clash),
                      absl::StatusCode::kNotFound, {"pod q", "node gone"}));
  EXPECT_TRUE(IsError(RestoreBoundPod(c.state(), other, "n", {}),
                      absl::StatusCode::kInvalidArgument, {"pod q"}));
  EXPECT_EQ(c.state(), before);
}

// Restart: place a mix, render every pod's annotations, rebuild a fresh cluster from them alone.
TEST(AnnotationsTest, RestartFromAnnotationsRebuildsTheSameState) {
  CheckedCluster live;
  ASSERT_OK(live.AddNodeJson(kH100Node));
  ASSERT_OK(live.AddNodeJson(kGpushareNode));
  const char* pods[] = {
      R"({"name":"whole","requests":{"cpu":"4","memory":"16Gi","nvidia.com/gpu":"2"}})",
      R"({"name":"half","requests":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"50"}})",
      R"({"name":"bytes","requests":{"koordinator.sh/gpu-core":"20","koordinator.sh/gpu-memory":"5Gi","koordinator.sh/rdma":"25"}})",
      R"({"name":"share1","requests":{"aliyun.com/gpu-mem":"8138"}})",
      R"({"name":"share2","requests":{"aliyun.com/gpu-mem":"4069"}})",
  };
  std::map<std::string, std::pair<Pod, Annotations>> records;
  for (const char* json : pods) {
    Pod p = MakePod(json);
    Placement r = live.Place(p);
    ASSERT_TRUE(r.ok()) << r.reason;
    const Node& node = live.state().node(live.state().FindNode(r.allocation.node));
    bool gpushare = p.Find(kGpu) != nullptr && p.Find(kGpu)->core == 0;
    records[p.name] = {p, AllocationAnnotations(r.allocation, node, gpushare)};
  }
  CheckedCluster restarted;
  ASSERT_OK(restarted.AddNodeJson(kH100Node));
  ASSERT_OK(restarted.AddNodeJson(kGpushareNode));
  for (const auto& [name, record] : records) {
    const Allocation* before = live.state().FindAllocation(name);
    ASSERT_NE(before, nullptr);
    auto a = RestoreBoundPod(restarted.state(), record.first, before->node, record.second);
    ASSERT_TRUE(IsOk(a)) << name;
    EXPECT_OK(restarted.state().CheckInvariants());
  }
  EXPECT_EQ(restarted.state(), live.state());
}

}  // namespace
}  // namespace gpufleet

namespace gpufleet {
namespace {

// An allocation rebuilt from annotations must be exactly what the pod's request gives on those
// devices; anything else is refused with the pod, the key and the difference, state unchanged.
TEST(AnnotationsRestoreStrictTest, AnnotationsThatDisagreeWithTheRequestAreRefused) {
  const std::string koord = kDeviceAllocatedAnnotation;
  auto gpu = [](int minor, const char* core, const char* memory, const char* ratio = nullptr) {
    std::string res = absl::StrCat(R"({"minor":)", minor, R"(,"resources":{"koordinator.sh/gpu-core":")",
                                   core, R"(","koordinator.sh/gpu-memory":")", memory, "\"");
    if (ratio) absl::StrAppend(&res, R"(,"koordinator.sh/gpu-memory-ratio":")", ratio, "\"");
    return res + "}}";
  };
  struct Case {
    const char* name;
    const char* requests;  // the pod's requests as JSON
    Annotations annotations;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {"two granted, one asked", R"({"nvidia.com/gpu":"1"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "100", "80Gi"), ",", gpu(1, "100", "80Gi"), "]}")}},
       {"pod ns/a: annotation " + koord + " grants 2 gpu devices, the pod requests 1"}},
      {"none granted to a GPU pod", R"({"nvidia.com/gpu":"1"})", {{koord, "{}"}},
       {"pod ns/a", koord, "grants 0 gpu devices, the pod requests 1"}},
      {"devices granted to a CPU pod", R"({"cpu":"1"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "100", "80Gi"), "]}")}},
       {"pod ns/a", "grants 1 gpu devices, the pod requests 0"}},
      {"50% asked, 100% granted", R"({"koordinator.sh/gpu":"50"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "100", "80Gi", "100"), "]}")}},
       {"pod ns/a", koord, "grants gpu 0 core 100%, the pod requests 50%"}},
      {"50% asked, 10% granted", R"({"koordinator.sh/gpu":"50"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "10", "8Gi", "10"), "]}")}},
       {"pod ns/a", koord, "grants gpu 0 core 10%, the pod requests 50%"}},
      {"right core, wrong memory", R"({"koordinator.sh/gpu":"50"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "50", "80Gi", "100"), "]}")}},
       {"pod ns/a", koord, "grants gpu 0 memory 80Gi, the pod requests 40Gi on that device"}},
      {"whole asked, a share granted", R"({"nvidia.com/gpu":"1"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "50", "40Gi", "50"), "]}")}},
       {"pod ns/a", "grants gpu 0 core 50%, the pod requests 100% (a whole device)"}},
      {"whole asked, no memory granted", R"({"nvidia.com/gpu":"1"})",
       {{koord, R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"100"}}]})"}},
       {"pod ns/a", "grants gpu 0 memory 0, the pod requests 80Gi"}},
      {"gpushare memory differs", R"({"aliyun.com/gpu-mem":"8192"})",
       {{kGpushareIdx, "0"}, {kGpusharePod, "4096"}},
       {"pod ns/a: annotation ALIYUN_COM_GPU_MEM_POD grants gpu 0 memory 4Gi, the pod requests 8Gi"}},
      {"gpushare zero-byte grant", R"({"aliyun.com/gpu-mem":"8192"})",
       {{kGpushareIdx, "0"}, {kGpusharePod, "0"}},
       {"pod ns/a: annotation ALIYUN_COM_GPU_MEM_POD", "0 memory units"}},
      {"gpushare on two cards for one", R"({"aliyun.com/gpu-mem":"8192"})",
       {{kGpushareIdx, "0,1"}, {kGpusharePod, "8192"}},
       {"pod ns/a: annotation ALIYUN_COM_GPU_MEM_IDX grants 2 gpu devices, the pod requests 1"}},
      {"gpushare grant for a whole-GPU pod", R"({"nvidia.com/gpu":"1"})",
       {{kGpushareIdx, "0"}, {kGpusharePod, "81920"}},
       {"pod ns/a", "grants gpu 0 core 0%, the pod requests 100% (a whole device)"}},
      {"rdma share differs", R"({"nvidia.com/gpu":"1","koordinator.sh/rdma":"50"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "100", "80Gi"),
                             R"(],"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"100"}}]})")}},
       {"pod ns/a", "grants rdma 0 core 100%, the pod requests 50%"}},
      {"fraction in a grant", R"({"koordinator.sh/gpu":"50"})",
       {{koord, absl::StrCat(R"({"gpu":[)", gpu(0, "50.5", "40Gi", "50"), "]}")}},
       {"pod ns/a", "koordinator.sh/gpu-core", "\"50.5\"", "whole numbers only"}},
      {"duplicate key in the annotation", R"({"nvidia.com/gpu":"1"})",
       {{koord, R"({"gpu":[],"gpu":[]})"}},
       {"pod ns/a", koord, "duplicate key \"gpu\""}},
      {"unknown resource in a grant", R"({"koordinator.sh/gpu":"50"})",
       {{koord, R"({"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-cores":"50"}}]})"}},
       {"pod ns/a", "unknown field \"koordinator.sh/gpu-cores\"",
        "did you mean \"koordinator.sh/gpu-core\"?"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CheckedCluster cluster;
    ASSERT_OK(cluster.AddNodeJson(kH100Node));
    // Something already bound, so "unchanged" covers more than an empty cluster.
    Pod bound = MakePod(R"({"name":"ns/b","requests":{"nvidia.com/gpu":"1"}})");
    ASSERT_TRUE(IsOk(RestoreBoundPod(
        cluster.state(), bound, "n",
        {{koord, absl::StrCat(R"({"gpu":[)", gpu(3, "100", "80Gi", "100"), "]}")}})));
    const ClusterState before = cluster.state();
    Pod pod = MakePod(absl::StrCat(R"({"name":"ns/a","requests":)", c.requests, "}"));
    EXPECT_TRUE(IsError(RestoreBoundPod(cluster.state(), pod, "n", c.annotations),
                        absl::StatusCode::kInvalidArgument, c.parts));
    EXPECT_EQ(cluster.state(), before);
  }
}

// What the scheduler itself writes restores, whatever the vocabulary of the request.
TEST(AnnotationsRestoreStrictTest, RecordsTheSchedulerWroteRestoreExactly) {
  const char* requests[] = {
      R"({"nvidia.com/gpu":"2"})",
      R"({"koordinator.sh/gpu":"50"})",
      R"({"koordinator.sh/gpu-core":"30","koordinator.sh/gpu-memory":"10Gi"})",
      R"({"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"25"})",
      R"({"koordinator.sh/gpu.shared":"2","koordinator.sh/gpu-core":"100","koordinator.sh/gpu-memory-ratio":"100"})",
      R"({"aliyun.com/gpu-mem":"8192"})",
      R"({"nvidia.com/gpu":"1","koordinator.sh/rdma":"50"})",
  };
  for (const char* r : requests) {
    for (bool gpushare : {false, true}) {
      SCOPED_TRACE(absl::StrCat(r, gpushare ? " with gpushare keys" : ""));
      CheckedCluster placed;
      ASSERT_OK(placed.AddNodeJson(kH100Node));
      Pod pod = MakePod(absl::StrCat(R"({"name":"ns/a","requests":)", r, "}"));
      auto strategy = MakeStrategy("binpack");
      ASSERT_TRUE(strategy.ok());
      Placement result = test::PlaceWith(Placer(), placed.state(), pod, **strategy, true);
      ASSERT_TRUE(result.ok()) << result.reason;
      Annotations written =
          AllocationAnnotations(result.allocation, placed.state().node(0), gpushare);
      CheckedCluster restored;
      ASSERT_OK(restored.AddNodeJson(kH100Node));
      auto a = RestoreBoundPod(restored.state(), pod, "n", written);
      ASSERT_TRUE(IsOk(a));
      EXPECT_EQ(a->devices, result.allocation.devices);
    }
  }
}

}  // namespace
}  // namespace gpufleet
