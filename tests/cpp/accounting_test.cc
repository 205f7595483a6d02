// ClusterState accounting: per-device Filter answers, the Reserve/Unreserve/Commit/Release
// transaction, invariants after every mutation (CheckedCluster), and state left unchanged by every
// failed mutation. Includes gpushare's filter example (designs.md: two nodes with the same free
// memory in total, only one with it on a single card).
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/placement/placer.h"

#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::CheckedCluster;
using test::DeviceNames;
using test::GiB;
using test::IsError;
using test::IsOk;
using test::MakeAllocation;
using test::MakeNode;
using test::MakePod;
using test::MiB;

constexpr char kFourV100[] =
    R"({"name":"n1","cpu":"32","memory":"128Gi","gpus":{"count":4,"model":"V100M16","memory":"16Gi"}})";
constexpr char kCpuOnly[] = R"({"name":"c1","cpu":"8","memory":"32Gi"})";

Pod WholeGpus(const std::string& name, int n) {
  return MakePod(R"({"name":")" + name + R"(","requests":{"cpu":"1","nvidia.com/gpu":")" +
                 std::to_string(n) + R"("}})");
}
Pod GpuMem(const std::string& name, int mib) {
  return MakePod(R"({"name":")" + name + R"(","requests":{"aliyun.com/gpu-mem":")" +
                 std::to_string(mib) + R"("}})");
}

void ExpectFit(const FitResult& f, FitCode code, const std::string& reason_part) {
  EXPECT_EQ(FitCodeName(f.code), std::string(FitCodeName(code))) << f.reason;
  EXPECT_NE(f.reason.find(reason_part), std::string::npos)
      << "reason \"" << f.reason << "\" lacks \"" << reason_part << "\"";
}

TEST(AccountingTest, FilterOkAndInsufficientDevices) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  EXPECT_TRUE(c.Filter(WholeGpus("a", 4), "n1").ok());
  ASSERT_TRUE(c.Place(WholeGpus("a", 3)).ok());
  ExpectFit(c.Filter(WholeGpus("b", 2), "n1"), FitCode::kUnschedulable,
            "Insufficient gpu devices");
  EXPECT_TRUE(c.Filter(WholeGpus("b", 1), "n1").ok());
}

TEST(AccountingTest, FilterUnresolvableWhenNoSuchDevices) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  ASSERT_OK(c.AddNodeJson(kCpuOnly));
  ExpectFit(c.Filter(WholeGpus("a", 1), "c1"), FitCode::kUnschedulableAndUnresolvable,
            "node has no gpu devices");
  ExpectFit(c.Filter(WholeGpus("a", 5), "n1"), FitCode::kUnschedulableAndUnresolvable,
            "node has 4 gpu devices, pod needs 5");
  Pod h100 = MakePod(R"({"name":"h","requests":{"nvidia.com/gpu":"1"},"gpu_models":["H100"]})");
  ExpectFit(c.Filter(h100, "n1"), FitCode::kUnschedulableAndUnresolvable,
            "node has no gpu of model H100");
  Pod v100 = MakePod(
      R"({"name":"v","requests":{"nvidia.com/gpu":"1"},"gpu_models":["H100","V100M16"]})");
  EXPECT_TRUE(c.Filter(v100, "n1").ok());
  Pod rdma = MakePod(R"({"name":"r","requests":{"koordinator.sh/rdma":"100"}})");
  ExpectFit(c.Filter(rdma, "n1"), FitCode::kUnschedulableAndUnresolvable,
            "node has no rdma devices");
}

TEST(AccountingTest, FilterCpuMemoryAndPodCount) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(R"({"name":"c1","cpu":"4","memory":"8Gi","pods":2})"));
  Pod big = MakePod(R"({"name":"big","requests":{"cpu":"5"}})");
  ExpectFit(c.Filter(big, "c1"), FitCode::kUnschedulableAndUnresolvable,
            "Insufficient cpu (more than the node has)");
  Pod mem = MakePod(R"({"name":"mem","requests":{"memory":"9Gi"}})");
  ExpectFit(c.Filter(mem, "c1"), FitCode::kUnschedulableAndUnresolvable,
            "Insufficient memory (more than the node has)");
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"a","requests":{"cpu":"3","memory":"6Gi"}})")).ok());
  ExpectFit(c.Filter(MakePod(R"({"name":"b","requests":{"cpu":"2"}})"), "c1"),
            FitCode::kUnschedulable, "Insufficient cpu");
  ExpectFit(c.Filter(MakePod(R"({"name":"b","requests":{"memory":"3Gi"}})"), "c1"),
            FitCode::kUnschedulable, "Insufficient memory");
  ASSERT_TRUE(c.Place(MakePod(R"({"name":"b","requests":{"cpu":"1"}})")).ok());
  ExpectFit(c.Filter(MakePod(R"({"name":"c"})"), "c1"), FitCode::kUnschedulable, "Too many pods");
}

// gpushare designs.md, filter: every node has 8138 MiB free in total, only n2 on one card.
TEST(AccountingTest, GpushareFilterChecksOneDeviceNotNodeTotals) {
  CheckedCluster c;
  for (const char* n : {"n1", "n2", "n3"})
    ASSERT_OK(c.AddNodeJson(std::string(R"({"name":")") + n +
                            R"(","cpu":"16","memory":"64Gi","gpus":{"count":2,"memory":"8138Mi"}})"));
  for (const char* a : {
           R"({"pod":"u1","node":"n1","devices":[{"minor":0,"memory":"4069Mi"},{"minor":1,"memory":"4069Mi"}]})",
           R"({"pod":"u2","node":"n2","devices":[{"minor":1,"memory":"8138Mi"}]})",
           R"({"pod":"u3","node":"n3","devices":[{"minor":0,"memory":"2034Mi"},{"minor":1,"memory":"6104Mi"}]})"}) {
    ASSERT_OK(c.Reserve(MakeAllocation(a)));
  }
  Pod pod = GpuMem("want", 8138);
  ExpectFit(c.Filter(pod, "n1"), FitCode::kUnschedulable, "Insufficient GPU memory in one device");
  EXPECT_TRUE(c.Filter(pod, "n2").ok());
  ExpectFit(c.Filter(pod, "n3"), FitCode::kUnschedulable, "Insufficient GPU memory in one device");
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(c.state().usage(i).gpu_memory_capacity - c.state().usage(i).gpu_memory_used,
              MiB(8138));

  Placement r = c.Place(pod);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.allocation.node, "n2");
  EXPECT_EQ(DeviceNames(r.allocation), std::vector<std::string>{"gpu/0"});
  EXPECT_EQ(r.allocation.devices[0].memory_bytes, MiB(8138));

  Placement none = c.Place(GpuMem("more", 6105));
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.reason,
            "0/3 nodes are available: 3 Insufficient GPU memory in one device");
}

TEST(AccountingTest, InsufficientGpuCoreInOneDevice) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"n1","cpu":"8","memory":"8Gi","gpus":{"count":1,"memory":"16Gi"}})"));
  ASSERT_OK(c.Reserve(MakeAllocation(
      R"({"pod":"u","node":"n1","devices":[{"minor":0,"core":80,"memory":"1Gi"}]})")));
  Pod p = MakePod(
      R"({"name":"p","requests":{"koordinator.sh/gpu-core":"30","koordinator.sh/gpu-memory":"1Gi"}})");
  ExpectFit(c.Filter(p, "n1"), FitCode::kUnschedulable, "Insufficient GPU core in one device");
}

TEST(AccountingTest, ReserveUnreserveCommitRelease) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  const ClusterState empty = c.state();
  auto s = test::StrategyOrDie("binpack");
  Pod pod = WholeGpus("a", 2);
  const Placement planned = PlanOnNode(c.state(), pod, 0, *s);
  ASSERT_TRUE(planned.ok());
  const Allocation& plan = planned.allocation;
  EXPECT_EQ(c.state(), empty) << "Plan must not change the state";
  EXPECT_EQ(plan.node, "n1");
  EXPECT_EQ(DeviceNames(plan), (std::vector<std::string>{"gpu/0", "gpu/1"}));

  ASSERT_OK(c.Reserve(plan));
  const Allocation* a = c.state().FindAllocation("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->state, AllocationState::kReserved);
  EXPECT_EQ(a->assume_time_ns, 1700000000000000000);
  EXPECT_EQ(c.state().used_core()[0], 100);
  EXPECT_EQ(c.state().used_memory()[1], GiB(16));
  EXPECT_EQ(c.state().used_core()[2], 0);
  EXPECT_EQ(c.state().usage(0).gpu_whole_free, 2);
  EXPECT_EQ(c.state().usage(0).cpu_used, 1000);

  // Unreserve is idempotent and restores the empty state exactly.
  ASSERT_OK(c.Unreserve("a"));
  ASSERT_OK(c.Unreserve("a"));
  ASSERT_OK(c.Unreserve("never-seen"));
  EXPECT_EQ(c.state(), empty);

  ASSERT_OK(c.Reserve(plan));
  EXPECT_TRUE(IsError(c.Reserve(plan), absl::StatusCode::kAlreadyExists, {"pod a"}));
  ASSERT_OK(c.Commit("a"));
  EXPECT_EQ(c.state().FindAllocation("a")->state, AllocationState::kBound);
  const ClusterState bound = c.state();
  EXPECT_TRUE(IsError(c.Unreserve("a"), absl::StatusCode::kFailedPrecondition, {"bound"}));
  EXPECT_EQ(c.state(), bound) << "unreserving a bound pod must not touch it";
  EXPECT_TRUE(IsError(c.Commit("zzz"), absl::StatusCode::kNotFound, {"zzz"}));
  EXPECT_EQ(c.state().num_allocations(), 1);

  ASSERT_OK(c.Release("a"));
  EXPECT_EQ(c.state(), empty);
  EXPECT_TRUE(IsError(c.Release("a"), absl::StatusCode::kNotFound, {"pod a"}));
}

TEST(AccountingTest, ReleaseFreesAReservedPodToo) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  const ClusterState empty = c.state();
  ASSERT_TRUE(c.Place(GpuMem("a", 1000), "binpack", /*commit=*/false).ok());
  EXPECT_EQ(c.state().FindAllocation("a")->state, AllocationState::kReserved);
  ASSERT_OK(c.Release("a"));
  EXPECT_EQ(c.state(), empty);
}

TEST(AccountingTest, FailedReserveLeavesStateUnchanged) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"n1","cpu":"4","memory":"8Gi","pods":3,"gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.Reserve(MakeAllocation(
      R"({"pod":"held","node":"n1","cpu":"1","memory":"1Gi","devices":[{"minor":0,"core":60,"memory":"10Gi"}]})")));
  ASSERT_OK(c.Commit("held"));
  const ClusterState before = c.state();
  struct Bad {
    const char* allocation;
    absl::StatusCode code;
    const char* part;
  };
  const Bad cases[] = {
      {R"({"pod":"","node":"n1"})", absl::StatusCode::kInvalidArgument, "no pod name"},
      {R"({"pod":"held","node":"n1"})", absl::StatusCode::kAlreadyExists, "already holds"},
      {R"({"pod":"x","node":"nope"})", absl::StatusCode::kNotFound, "node nope"},
      {R"({"pod":"x","node":"n1","devices":[{"minor":7,"core":10}]})", absl::StatusCode::kNotFound,
       "no gpu device with minor 7"},
      {R"({"pod":"x","node":"n1","devices":[{"type":"rdma","minor":0,"core":10}]})",
       absl::StatusCode::kNotFound, "no rdma device"},
      {R"({"pod":"x","node":"n1","devices":[{"minor":0,"core":41}]})",
       absl::StatusCode::kFailedPrecondition, "over-commit gpu 0"},
      {R"({"pod":"x","node":"n1","devices":[{"minor":0,"memory":"7Gi"}]})",
       absl::StatusCode::kFailedPrecondition, "over-commit gpu 0"},
      // The first grant fits, the second does not: nothing may be applied.
      {R"({"pod":"x","node":"n1","devices":[{"minor":1,"core":100,"memory":"16Gi"},{"minor":0,"core":50}]})",
       absl::StatusCode::kFailedPrecondition, "over-commit gpu 0"},
      {R"({"pod":"x","node":"n1","devices":[{"minor":1,"core":10},{"minor":1,"core":10}]})",
       absl::StatusCode::kInvalidArgument, "names gpu 1 twice"},
      {R"({"pod":"x","node":"n1","devices":[{"minor":1,"core":-10}]})",
       absl::StatusCode::kInvalidArgument, "negative grant"},
      {R"({"pod":"x","node":"n1","cpu":"4"})", absl::StatusCode::kFailedPrecondition,
       "over-commit cpu"},
      {R"({"pod":"x","node":"n1","memory":"8Gi"})", absl::StatusCode::kFailedPrecondition,
       "over-commit memory"},
      {R"({"pod":"x","node":"n1","devices":[{"minor":1,"memory":"9223372036854775807"}]})",
       absl::StatusCode::kFailedPrecondition, "over-commit gpu 1"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.allocation);
    EXPECT_TRUE(IsError(c.Reserve(MakeAllocation(b.allocation)), b.code, {b.part}));
    EXPECT_EQ(c.state(), before);
  }
  // Sums that would overflow int64 are over-commits, not wrap-arounds.
  Allocation huge = MakeAllocation(R"({"pod":"x","node":"n1"})");
  huge.cpu_milli = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(IsError(c.Reserve(huge), absl::StatusCode::kFailedPrecondition, {"over-commit cpu"}));
  huge.cpu_milli = 0;
  huge.memory_bytes = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(
      IsError(c.Reserve(huge), absl::StatusCode::kFailedPrecondition, {"over-commit memory"}));
  EXPECT_EQ(c.state(), before);
  Allocation negative = MakeAllocation(R"({"pod":"x","node":"n1"})");
  negative.cpu_milli = -1;
  EXPECT_TRUE(IsError(c.Reserve(negative), absl::StatusCode::kInvalidArgument, {"negative"}));
  EXPECT_EQ(c.state(), before);
  // Two more pods fit the pod limit of 3, a third does not.
  ASSERT_OK(c.Reserve(MakeAllocation(R"({"pod":"y","node":"n1"})")));
  ASSERT_OK(c.Reserve(MakeAllocation(R"({"pod":"z","node":"n1"})")));
  const ClusterState full = c.state();
  EXPECT_TRUE(IsError(c.Reserve(MakeAllocation(R"({"pod":"w","node":"n1"})")),
                      absl::StatusCode::kFailedPrecondition, {"too many pods"}));
  EXPECT_EQ(c.state(), full);
}

TEST(AccountingTest, CopiesAreIndependentAndCompareEqual) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  ASSERT_TRUE(c.Place(WholeGpus("a", 1)).ok());
  ClusterState copy = c.state();
  EXPECT_EQ(copy, c.state());
  ASSERT_OK(copy.Release("a"));
  EXPECT_FALSE(copy == c.state());
  EXPECT_NE(c.state().FindAllocation("a"), nullptr);
  EXPECT_EQ(c.state().used_core()[0], 100);
  EXPECT_EQ(copy.used_core()[0], 0);
  ClusterState assigned;
  assigned = c.state();
  EXPECT_EQ(assigned, c.state());
}

TEST(AccountingTest, UnhealthyDevicesAreNeverChosen) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  ASSERT_OK(c.SetDeviceHealth("n1", "gpu", 0, false));
  ASSERT_OK(c.SetDeviceHealth("n1", "gpu", 2, false));
  EXPECT_EQ(c.state().usage(0).gpu_count, 2);
  EXPECT_EQ(c.state().usage(0).gpu_whole_free, 2);
  ExpectFit(c.Filter(WholeGpus("a", 3), "n1"), FitCode::kUnschedulable,
            "Insufficient gpu devices");
  for (int k = 0; k < 4; ++k) {
    Placement r = c.Place(GpuMem("s" + std::to_string(k), 8000));
    ASSERT_TRUE(r.ok()) << r.reason;
    for (const DeviceGrant& g : r.allocation.devices) EXPECT_TRUE(g.minor == 1 || g.minor == 3);
  }
  EXPECT_FALSE(c.Place(GpuMem("s4", 8000)).ok());
  EXPECT_EQ(c.state().used_memory()[0], 0);
  EXPECT_EQ(c.state().used_memory()[2], 0);
  // Health comes back: the device is usable again.
  ASSERT_OK(c.SetDeviceHealth("n1", "gpu", 2, true));
  Placement r = c.Place(GpuMem("s5", 8000));
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(DeviceNames(r.allocation), std::vector<std::string>{"gpu/2"});
}

TEST(AccountingTest, SetDeviceHealthErrors) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  const ClusterState before = c.state();
  EXPECT_TRUE(IsError(c.SetDeviceHealth("nope", "gpu", 0, false), absl::StatusCode::kNotFound,
                      {"node nope"}));
  EXPECT_TRUE(IsError(c.SetDeviceHealth("n1", "gpu", 9, false), absl::StatusCode::kNotFound,
                      {"no gpu device with minor 9"}));
  EXPECT_TRUE(IsError(c.SetDeviceHealth("n1", "rdma", 0, false), absl::StatusCode::kNotFound,
                      {"no rdma device"}));
  EXPECT_EQ(c.state(), before);
}

TEST(AccountingTest, UnhealthyDeviceHoldingAPodKeepsItsUsage) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  ASSERT_TRUE(c.Place(GpuMem("a", 1000)).ok());
  ASSERT_OK(c.SetDeviceHealth("n1", "gpu", 0, false));
  EXPECT_EQ(c.state().used_memory()[0], MiB(1000));
  ASSERT_OK(c.Release("a"));
  EXPECT_EQ(c.state().used_memory()[0], 0);
}

TEST(AccountingTest, WholeOnlyAndSharedOnlyNodes) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"w","cpu":"8","memory":"8Gi","gpu_sharing":"whole","gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"s","cpu":"8","memory":"8Gi","gpu_sharing":"shared","gpus":{"count":2,"memory":"16Gi"}})"));
  ExpectFit(c.Filter(GpuMem("p", 100), "w"), FitCode::kUnschedulableAndUnresolvable,
            "whole GPUs only");
  ExpectFit(c.Filter(WholeGpus("p", 1), "s"), FitCode::kUnschedulableAndUnresolvable,
            "shared GPUs only");
  EXPECT_TRUE(c.Filter(WholeGpus("p", 1), "w").ok());
  EXPECT_TRUE(c.Filter(GpuMem("p", 100), "s").ok());
  Placement whole = c.Place(WholeGpus("a", 1));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole.allocation.node, "w");
  Placement shared = c.Place(GpuMem("b", 100));
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared.allocation.node, "s");
  EXPECT_FALSE(c.Place(WholeGpus("c", 2)).ok());
}

TEST(AccountingTest, MixedNodeGivesWholePodsUntouchedCardsOnly) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"m","cpu":"8","memory":"8Gi","gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_TRUE(c.Place(GpuMem("s", 1)).ok());
  Placement w = c.Place(WholeGpus("w", 1));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(DeviceNames(w.allocation), std::vector<std::string>{"gpu/1"});
  EXPECT_EQ(w.allocation.devices[0].core, 100);
  EXPECT_EQ(w.allocation.devices[0].memory_bytes, GiB(16));
  ExpectFit(c.Filter(WholeGpus("x", 1), "m"), FitCode::kUnschedulable, "Insufficient gpu devices");
  // A memory-only pod still fits beside the first one.
  EXPECT_TRUE(c.Filter(GpuMem("y", 1000), "m").ok());
}

TEST(AccountingTest, MemoryRatioIsBytesOfTheChosenCard) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"big","cpu":"8","memory":"8Gi","gpus":{"count":1,"model":"H100","memory":"80Gi"}})"));
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"small","cpu":"8","memory":"8Gi","gpus":{"count":1,"model":"V100M16","memory":"16Gi"}})"));
  for (const auto& [model, bytes] :
       {std::pair<std::string, int64_t>{"H100", GiB(40)}, {"V100M16", GiB(8)}}) {
    Pod p = MakePod(R"({"name":")" + model +
                    R"(","gpu_models":[")" + model +
                    R"("],"requests":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory-ratio":"50"}})");
    Placement r = c.Place(p);
    ASSERT_TRUE(r.ok()) << r.reason;
    ASSERT_EQ(r.allocation.devices.size(), 1u);
    EXPECT_EQ(r.allocation.devices[0].memory_bytes, bytes);
    EXPECT_EQ(r.allocation.devices[0].core, 50);
  }
}

TEST(AccountingTest, AddNodeErrorsLeaveStateUnchanged) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(kFourV100));
  const ClusterState before = c.state();
  EXPECT_TRUE(IsError(c.AddNodeJson(kFourV100), absl::StatusCode::kAlreadyExists, {"n1"}));
  Node bad = MakeNode(kFourV100);
  bad.name = "n2";
  bad.devices[1].core = 50;
  EXPECT_TRUE(IsError(c.AddNode(bad), absl::StatusCode::kInvalidArgument,
                      {"node n2", "core capacity must be 100"}));
  bad = MakeNode(kFourV100);
  bad.name = "n2";
  bad.devices[2].minor = 0;
  EXPECT_TRUE(IsError(c.AddNode(bad), absl::StatusCode::kInvalidArgument,
                      {"duplicate gpu device minor 0"}));
  bad = MakeNode(kFourV100);
  bad.name = "n2";
  bad.nvlink_groups = {{0, 9}};
  EXPECT_TRUE(IsError(c.AddNode(bad), absl::StatusCode::kInvalidArgument, {"gpu 9"}));
  bad = MakeNode(kFourV100);
  bad.name = "n2";
  bad.devices[3].memory_bytes = int64_t{1} << 60;
  EXPECT_TRUE(IsError(c.AddNode(bad), absl::StatusCode::kInvalidArgument,
                      {"node n2", "gpu 3", "more than the 1Pi"}));
  bad = MakeNode(kFourV100);
  bad.name = "";
  EXPECT_TRUE(IsError(c.AddNode(bad), absl::StatusCode::kInvalidArgument, {"name is empty"}));
  EXPECT_EQ(c.state(), before);
}

TEST(AccountingTest, RemoveNodeRefusedWhilePodsHoldIt) {
  CheckedCluster c;
  for (const char* n : {"n1", "n2", "n3"})
    ASSERT_OK(c.AddNodeJson(std::string(R"({"name":")") + n +
                            R"(","cpu":"8","memory":"8Gi","gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.Reserve(MakeAllocation(
      R"({"pod":"r","node":"n2","devices":[{"minor":1,"core":100,"memory":"16Gi"}]})")));
  ASSERT_OK(c.Reserve(MakeAllocation(
      R"({"pod":"b","node":"n3","devices":[{"minor":0,"core":30,"memory":"1Gi"}]})")));
  ASSERT_OK(c.Commit("b"));
  const ClusterState before = c.state();
  EXPECT_TRUE(IsError(c.RemoveNode("n2"), absl::StatusCode::kFailedPrecondition,
                      {"node n2", "pod r"}));
  EXPECT_TRUE(IsError(c.RemoveNode("n3"), absl::StatusCode::kFailedPrecondition, {"pod b"}));
  EXPECT_TRUE(IsError(c.RemoveNode("zz"), absl::StatusCode::kNotFound, {"node zz"}));
  EXPECT_EQ(c.state(), before);

  ASSERT_OK(c.Release("r"));
  ASSERT_OK(c.RemoveNode("n2"));
  EXPECT_EQ(c.state().num_nodes(), 2);
  EXPECT_EQ(c.state().num_devices(), 4);
  EXPECT_EQ(c.state().FindNode("n2"), -1);
  ASSERT_EQ(c.state().FindNode("n3"), 1);
  EXPECT_EQ(c.state().first_device(1), 2);
  // n3's usage moved with it.
  EXPECT_EQ(c.state().used_core()[2], 30);
  EXPECT_EQ(c.state().device_node()[3], 1);
  ASSERT_OK(c.Release("b"));
  ASSERT_OK(c.RemoveNode("n1"));
  EXPECT_EQ(c.state().FindNode("n3"), 0);
  ASSERT_OK(c.AddNodeJson(R"({"name":"n2","cpu":"1","memory":"1Gi"})"));
  EXPECT_EQ(c.state().FindNode("n2"), 1);
}

TEST(AccountingTest, NodeSelectorAndTaints) {
  Node node = MakeNode(
      R"({"name":"n","cpu":"8","memory":"8Gi","labels":{"zone":"a","gpu":"h100"},
          "taints":[{"key":"dedicated","value":"ml","effect":"NoSchedule"},
                    {"key":"soft","value":"x","effect":"PreferNoSchedule"}]})");
  struct Case {
    const char* pod;
    bool ok;
    const char* reason;
  };
  const Case cases[] = {
      {R"({"name":"p"})", false, "untolerated taint {dedicated: ml}"},
      {R"({"name":"p","tolerations":[{"key":"dedicated","value":"ml"}]})", true, ""},
      {R"({"name":"p","tolerations":[{"key":"dedicated","value":"other"}]})", false,
       "untolerated taint"},
      {R"({"name":"p","tolerations":[{"key":"dedicated","operator":"Exists"}]})", true, ""},
      {R"({"name":"p","tolerations":[{"operator":"Exists"}]})", true, ""},
      {R"({"name":"p","tolerations":[{"operator":"Exists","effect":"NoExecute"}]})", false,
       "untolerated taint"},
      {R"({"name":"p","tolerations":[{"key":"dedicated","value":"ml","effect":"NoSchedule"}],
          "node_selector":{"zone":"a"}})", true, ""},
      {R"({"name":"p","tolerations":[{"operator":"Exists"}],"node_selector":{"zone":"b"}})", false,
       "didn't match Pod's node affinity/selector"},
      {R"({"name":"p","tolerations":[{"operator":"Exists"}],"node_selector":{"rack":"1"}})", false,
       "didn't match"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.pod);
    FitResult f = FitsNodeConstraints(MakePod(k.pod), node);
    EXPECT_EQ(f.ok(), k.ok) << f.reason;
    if (!k.ok) ExpectFit(f, FitCode::kUnschedulableAndUnresolvable, k.reason);
  }
}

TEST(AccountingTest, PlaceHonoursConstraintsAndSummarisesReasons) {
  CheckedCluster c;
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"a","cpu":"8","memory":"8Gi","labels":{"zone":"a"},"gpus":{"count":1,"memory":"16Gi"}})"));
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"b","cpu":"8","memory":"8Gi","labels":{"zone":"b"},"gpus":{"count":2,"memory":"16Gi"}})"));
  ASSERT_OK(c.AddNodeJson(R"({"name":"c","cpu":"8","memory":"8Gi","labels":{"zone":"a"}})"));
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"d","cpu":"8","memory":"8Gi","labels":{"zone":"a"},"gpus":{"count":2,"memory":"16Gi"},
          "taints":[{"key":"k","value":"v"}]})"));
  Pod pod = MakePod(R"({"name":"p","node_selector":{"zone":"a"},"requests":{"nvidia.com/gpu":"2"}})");
  Placement r = c.Place(pod);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason,
            "0/4 nodes are available: 1 node has 1 gpu devices, pod needs 2, 1 node has no gpu "
            "devices, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had "
            "untolerated taint {k: v}");
  Pod tolerant = MakePod(
      R"({"name":"p","node_selector":{"zone":"a"},"tolerations":[{"key":"k","value":"v"}],
          "requests":{"nvidia.com/gpu":"2"}})");
  r = c.Place(tolerant);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.allocation.node, "d");
  r = c.Place(tolerant);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, "pod p is already placed");
}

TEST(AccountingTest, PlaceOnEmptyClusterSaysZeroOfZero) {
  CheckedCluster c;
  Placement r = c.Place(WholeGpus("a", 1));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, "0/0 nodes are available");
}

TEST(AccountingTest, LongMixedSequenceKeepsInvariantsAndReleasesToEmpty) {
  CheckedCluster c;  // checks the invariants after every step
  ASSERT_OK(c.AddNodeJson(kFourV100));
  ASSERT_OK(c.AddNodeJson(
      R"({"name":"n2","cpu":"32","memory":"128Gi","gpus":{"count":2,"memory":"80Gi"}})"));
  const ClusterState empty = c.state();
  std::vector<std::string> held;
  for (int k = 0; k < 40; ++k) {
    std::string name = "p" + std::to_string(k);
    Pod p = k % 3 == 0 ? WholeGpus(name, 1 + k % 2) : GpuMem(name, 3000 + 700 * (k % 9));
    if (c.Place(p, k % 2 ? "spread" : "binpack").ok()) held.push_back(name);
    if (k % 5 == 4 && !held.empty()) {
      ASSERT_OK(c.Release(held.front()));
      held.erase(held.begin());
    }
  }
  EXPECT_GT(held.size(), 3u);
  EXPECT_EQ(c.state().num_allocations(), static_cast<int>(held.size()));
  for (const std::string& name : held) ASSERT_OK(c.Release(name));
  EXPECT_EQ(c.state(), empty);
}

}  // namespace
}  // namespace gpufleet
