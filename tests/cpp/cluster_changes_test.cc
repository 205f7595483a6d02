// ClusterState::NodesChangedSince: a reader that remembers where it stopped in the change log
// learns exactly the nodes changed since (each once, in the order of its first change), and is
// told to read everything when its position no longer belongs to the state's log.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufleet/accounting/cluster_state.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::MakeAllocation;
using test::MakeNode;

Node GpuNode(const std::string& name) {
  return MakeNode(R"({"name":")" + name +
                  R"(","cpu":"16","memory":"64Gi","gpus":{"count":2,"memory":"16Gi"}})");
}

Allocation OneGpu(const std::string& pod, const std::string& node, int minor) {
  return MakeAllocation(R"({"pod":")" + pod + R"(","node":")" + node +
                        R"(","devices":[{"minor":)" + std::to_string(minor) +
                        R"(,"core":100,"memory":"16Gi"}]})");
}

struct Mark {
  uint64_t id, position;
};

Mark Now(const ClusterState& s) { return {s.changes().id(), s.changes().end()}; }

std::optional<std::vector<int>> Since(const ClusterState& s, Mark m) {
  return s.NodesChangedSince(m.id, m.position);
}

TEST(ClusterChangesTest, NamesEachChangedNodeOnceInOrder) {
  ClusterState s;
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(s.AddNode(GpuNode(n)).ok());
  Mark start = Now(s);
  EXPECT_EQ(Since(s, start), std::vector<int>{});
  ASSERT_TRUE(s.Reserve(OneGpu("p", "c", 0)).ok());
  ASSERT_TRUE(s.Reserve(OneGpu("q", "a", 1)).ok());
  ASSERT_TRUE(s.Reserve(OneGpu("r", "c", 1)).ok());
  EXPECT_EQ(Since(s, start), (std::vector<int>{2, 0}));
  Mark later = Now(s);
  ASSERT_TRUE(s.Commit("q").ok());  // no usage moves, but the node's allocations changed
  EXPECT_EQ(Since(s, later), std::vector<int>{0});
  later = Now(s);
  ASSERT_TRUE(s.SetDeviceHealth("b", kGpu, 0, false).ok());
  ASSERT_TRUE(s.Release("p").ok());
  ASSERT_TRUE(s.Unreserve("r").ok());
  EXPECT_EQ(Since(s, later), (std::vector<int>{1, 2}));
  later = Now(s);
  ASSERT_TRUE(s.AddNode(GpuNode("d")).ok());
  EXPECT_EQ(Since(s, later), std::vector<int>{3});
}

TEST(ClusterChangesTest, FailedChangesAndQuestionsRecordNothing) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(GpuNode("a")).ok());
  ASSERT_TRUE(s.Reserve(OneGpu("p", "a", 0)).ok());
  Mark m = Now(s);
  EXPECT_FALSE(s.Reserve(OneGpu("p", "a", 1)).ok());  // the pod holds one already
  EXPECT_FALSE(s.Reserve(OneGpu("x", "a", 7)).ok());  // no such device
  EXPECT_FALSE(s.Commit("nobody").ok());
  EXPECT_TRUE(s.Unreserve("nobody").ok());             // nothing to drop
  EXPECT_FALSE(s.RemoveNode("a").ok());                // a pod holds it
  (void)s.Filter(test::MakePod(R"({"name":"f","requests":{"nvidia.com/gpu":"1"}})"), 0);
  EXPECT_EQ(s.changes().end(), m.position);
  EXPECT_EQ(Since(s, m), std::vector<int>{});
}

TEST(ClusterChangesTest, ForeignOrLostPositionsAskForAFullRead) {
  ClusterState s;
  for (const char* n : {"a", "b"}) ASSERT_TRUE(s.AddNode(GpuNode(n)).ok());
  Mark m = Now(s);
  ClusterState copy = s;  // a copy keeps its own log
  EXPECT_EQ(Since(copy, m), std::nullopt);
  EXPECT_EQ(Since(s, Mark{m.id, m.position + 1}), std::nullopt);  // past the end
  ASSERT_TRUE(s.RemoveNode("a").ok());                            // indices shift
  EXPECT_EQ(Since(s, m), std::nullopt);
  EXPECT_EQ(Since(s, Now(s)), std::vector<int>{});

  // A reader that falls further behind than the log keeps is told to read everything.
  Mark behind = Now(s);
  bool lost = false;
  for (int k = 0; k < 4000 && !lost; ++k) {
    ASSERT_TRUE(s.Reserve(OneGpu("p", "b", 0)).ok());
    ASSERT_TRUE(s.Release("p").ok());
    lost = !Since(s, behind).has_value();
  }
  EXPECT_TRUE(lost);
  EXPECT_EQ(Since(s, Now(s)), std::vector<int>{});
}

}  // namespace
}  // namespace gpufleet
