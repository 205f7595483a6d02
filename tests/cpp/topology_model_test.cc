// The topology model: levels from node labels (Kueue, KAI), Volcano's HyperNodes, the NVLink
// clique level, nodes outside the topology, and bad input rejected in one line.
#include "gpufleet/topology/topology.h"

#include "gtest/gtest.h"
#include "topology_test_util.h"

namespace gpufleet::topology {
namespace {

using test::GpuNode;
using test::IsError;
using test::kBlockLabel;
using test::kRackLabel;

TEST(TopologyModelTest, LabelsGroupNodesByPathAndRackNamesRepeatAcrossBlocks) {
  // Kueue's documented example: node-1 and node-3 share the rack value "rack-1" in different
  // blocks, so they are two racks.
  ClusterState s;
  ASSERT_OK(s.AddNode(GpuNode("node-1", 8, {{kBlockLabel, "block-1"}, {kRackLabel, "rack-1"}})));
  ASSERT_OK(s.AddNode(GpuNode("node-2", 8, {{kBlockLabel, "block-1"}, {kRackLabel, "rack-2"}})));
  ASSERT_OK(s.AddNode(GpuNode("node-3", 8, {{kBlockLabel, "block-2"}, {kRackLabel, "rack-1"}})));
  ASSERT_OK(s.AddNode(GpuNode("node-4", 8, {{kBlockLabel, "block-2"}, {kRackLabel, "rack-3"}})));
  ASSERT_OK(s.AddNode(GpuNode("loose", 8, {{kBlockLabel, "block-1"}})));  // no rack label
  absl::StatusOr<Topology> t = Topology::FromLabels(s, {{"block", kBlockLabel}, {"rack", kRackLabel}});
  ASSERT_OK(t);
  EXPECT_EQ(t->num_domains(0), 2);
  EXPECT_EQ(t->num_domains(1), 4);
  EXPECT_NE(t->DomainOf(1, 0), t->DomainOf(1, 2));
  EXPECT_EQ(t->DomainPath(1, t->DomainOf(1, 2)), "block-2/rack-1");
  EXPECT_EQ(t->DomainOf(0, 0), t->DomainOf(0, 1));
  // A node without a label of some level is outside, as Kueue and KAI leave it.
  ASSERT_EQ(t->outside().size(), 1u);
  EXPECT_EQ(s.node(t->outside()[0]).name, "loose");
  EXPECT_EQ(t->DomainOf(0, 4), -1);
  // Every domain's nodes are contiguous in order().
  for (int l = 0; l < t->num_levels(); ++l)
    for (int d = 0; d < t->num_domains(l); ++d)
      for (int p = t->first_pos(l, d); p < t->end_pos(l, d); ++p)
        EXPECT_EQ(t->DomainOf(l, t->order()[p]), d);
  EXPECT_EQ(t->FindLevel("rack"), 1);
  EXPECT_EQ(t->FindLevel(kRackLabel), 1);  // by label too
}

TEST(TopologyModelTest, NvlinkCliqueLabelIsALevel) {
  // Two NVL72-style fabrics in one rack row: the clique label groups the nodes sharing one.
  ClusterState s;
  for (int i = 0; i < 4; ++i)
    ASSERT_OK(s.AddNode(GpuNode(absl::StrCat("gb", i), 4,
                                {{kRackLabel, "r0"},
                                 {kNvlinkCliqueLabel, i < 2 ? "8f3c-uuid.1" : "8f3c-uuid.2"}})));
  absl::StatusOr<Topology> t =
      Topology::FromLabels(s, {{"rack", kRackLabel}, {"nvlink", kNvlinkCliqueLabel}});
  ASSERT_OK(t);
  EXPECT_EQ(t->num_domains(1), 2);
  EXPECT_EQ(t->DomainOf(1, 0), t->DomainOf(1, 1));
  EXPECT_NE(t->DomainOf(1, 1), t->DomainOf(1, 2));
}

TEST(TopologyModelTest, LevelListErrors) {
  ClusterState s = test::RackCluster(1, 1, 1, 8);
  EXPECT_TRUE(IsError(Topology::FromLabels(s, {}), absl::StatusCode::kInvalidArgument, {"no levels"}));
  EXPECT_TRUE(IsError(Topology::FromLabels(s, {{"rack", kRackLabel}, {"rack", kBlockLabel}}),
                      absl::StatusCode::kInvalidArgument, {"level rack given twice"}));
  EXPECT_TRUE(IsError(Topology::FromLabels(s, {{"a", kRackLabel}, {"b", kRackLabel}}),
                      absl::StatusCode::kInvalidArgument, {"given for two levels"}));
}

HyperNodeMember NodeNamed(const std::string& n) { return {HyperNodeMember::Kind::kNode, n, "", {}}; }
HyperNodeMember NodesMatching(const std::string& re) { return {HyperNodeMember::Kind::kNode, "", re, {}}; }
HyperNodeMember Child(const std::string& n) { return {HyperNodeMember::Kind::kHyperNode, n, "", {}}; }

TEST(TopologyModelTest, HyperNodesBecomeTiers) {
  ClusterState s = test::RackCluster(1, 2, 2, 8);  // b0-r0-n0, b0-r0-n1, b0-r1-n0, b0-r1-n1
  ASSERT_OK(s.AddNode(GpuNode("gpu-x", 8, {{"zone", "z9"}})));
  std::vector<HyperNode> hn = {
      {"s0", 1, {NodesMatching("b0-r0-.*")}},
      {"s1", 1, {NodeNamed("b0-r1-n0"), NodeNamed("b0-r1-n1")}},
      {"s2", 2, {Child("s0"), Child("s1")}},
      // A tier-1 switch selected by labels, under the tier-3 spine directly (no tier 2).
      {"s3", 1, {{HyperNodeMember::Kind::kNode, "", "", {{"zone", "z9"}}}}},
      {"spine", 3, {Child("s2"), Child("s3")}},
  };
  absl::StatusOr<Topology> t = Topology::FromHyperNodes(s, hn);
  ASSERT_OK(t);
  ASSERT_EQ(t->num_levels(), 3);
  EXPECT_EQ(t->level(0).name, "tier-3");
  EXPECT_EQ(t->level(2).name, "tier-1");
  EXPECT_TRUE(t->outside().empty());
  EXPECT_EQ(t->DomainPath(2, t->DomainOf(2, 0)), "spine/s2/s0");
  // s3 skips tier 2: a pass-through domain of its own name stands there.
  EXPECT_EQ(t->DomainPath(2, t->DomainOf(2, 4)), "spine/s3/s3");
  EXPECT_EQ(t->DomainOf(0, 4), t->DomainOf(0, 0));
}

TEST(TopologyModelTest, HyperNodeErrorsAreOneLineAndNameTheObjects) {
  ClusterState s = test::RackCluster(1, 1, 2, 8);
  auto expect = [&](std::vector<HyperNode> hn, std::vector<std::string> parts) {
    absl::StatusOr<Topology> t = Topology::FromHyperNodes(s, hn);
    EXPECT_TRUE(IsError(t, absl::StatusCode::kInvalidArgument, parts));
    if (!t.ok()) {
      EXPECT_EQ(std::string(t.status().message()).find('\n'), std::string::npos);
    }
  };
  // A node in two racks.
  expect({{"a", 1, {NodeNamed("b0-r0-n0")}}, {"b", 1, {NodesMatching("b0-r0-.*")}}},
         {"node b0-r0-n0 is a member of two HyperNodes: a and b"});
  // A cycle.
  expect({{"a", 2, {Child("b")}}, {"b", 3, {Child("a")}}}, {"HyperNode cycle: a -> b -> a"});
  expect({{"a", 2, {Child("ghost")}}}, {"unknown HyperNode ghost"});
  expect({{"a", 1, {}}, {"a", 2, {}}}, {"HyperNode a is defined twice"});
  expect({{"a", 0, {}}}, {"tier 0"});
  expect({{"a", 2, {Child("b")}}, {"b", 2, {}}}, {"members need a lower tier"});
  expect({{"a", 1, {NodesMatching("(")}}}, {"bad regexMatch pattern"});
  expect({{"a", 3, {Child("c")}}, {"b", 3, {Child("c")}}, {"c", 1, {}}},
         {"HyperNode c is a member of two HyperNodes"});
}

}  // namespace
}  // namespace gpufleet::topology
