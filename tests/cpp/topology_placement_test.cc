// Gang placement across topology levels, as tables restating the anchors' documented behaviour:
// Kueue's BestFit and LeastFreeCapacity, slices, balanced placement and required/preferred
// levels, KAI's required + preferred levels, Volcano's hard/soft modes with highestTierAllowed,
// a leader with its workers, and NVLink partitions deciding a node's count.
#include "gpufleet/topology/gang_placer.h"

#include "gpufleet/topology/domain_fragmentation.h"

#include "gtest/gtest.h"
#include "topology_test_util.h"

namespace gpufleet::topology {
namespace {

using test::Gang;
using test::Group;
using test::Layout;
using test::Occupy;
using test::PodsPerDomain;

class TopologyPlacementTest : public ::testing::Test {
 protected:
  GangPlacement Place(const ClusterState& s, const Topology& t, const GangRequest& r) {
    absl::StatusOr<GangPlacement> p = placer_.Choose(s, t, r, *binpack_);
    EXPECT_OK(p);
    if (!p.ok()) return GangPlacement{"error", -1, -1, {}};
    if (p->ok()) {
      int pods = 0;
      for (const auto& g : p->groups) pods += g.pods();
      int want = 0;
      for (const auto& g : r.groups) want += g.count;
      EXPECT_EQ(pods, want);
    }
    return *p;
  }
  Topology Labels(const ClusterState& s) {
    absl::StatusOr<Topology> t = Topology::FromLabels(s, test::BlockRackHost());
    EXPECT_OK(t);
    return t.ok() ? *t : Topology();
  }
  std::unique_ptr<PlacementStrategy> binpack_ = test::StrategyOrDie("binpack");
  GangPlacer placer_;
};

Constraint Required(const std::string& l) { return Constraint{.required = l}; }
Constraint Preferred(const std::string& l) { return Constraint{.preferred = l}; }

TEST_F(TopologyPlacementTest, BestFitTakesTheTightestDomainLargestFitTheFreest) {
  ClusterState s = test::RackCluster(1, 3, 2, 8);
  Occupy(s, "b0-r0-n0", 8);
  Occupy(s, "b0-r0-n1", 4);  // r0: 4 free
  Occupy(s, "b0-r2-n0", 2);  // r2: 14 free, r1: 16 free
  const Topology t = Labels(s);
  struct Row {
    int pods;
    Fit fit;
    std::string rack;
  } rows[] = {
      {4, Fit::kBestFit, "b0/r0"},          {4, Fit::kLeastFreeCapacity, "b0/r0"},
      {4, Fit::kLargestFit, "b0/r1"},       {10, Fit::kBestFit, "b0/r2"},
      {10, Fit::kLargestFit, "b0/r1"},      {16, Fit::kBestFit, "b0/r1"},
  };
  for (const Row& row : rows) {
    GangPlacement p = Place(s, t, Gang({Group("w", 1, row.pods, Required("rack"))}, {}, row.fit));
    ASSERT_TRUE(p.ok()) << p.reason;
    EXPECT_EQ(t.DomainPath(p.groups[0].level, p.groups[0].domain), row.rack)
        << row.pods << " pods, " << FitName(row.fit);
  }
}

TEST_F(TopologyPlacementTest, BestFitFillsTheLargestNodesLeastFreeCapacityTheSmallGaps) {
  ClusterState s = test::RackCluster(1, 1, 3, 8);
  Occupy(s, "b0-r0-n0", 7);  // takes 1
  Occupy(s, "b0-r0-n1", 6);  // takes 2
  Occupy(s, "b0-r0-n2", 5);  // takes 3
  const Topology t = Labels(s);
  struct Row {
    int pods;
    Fit fit;
    std::string layout;
  } rows[] = {
      {3, Fit::kBestFit, "b0-r0-n2:3"},
      {3, Fit::kLeastFreeCapacity, "b0-r0-n0:1 b0-r0-n1:2"},
      {4, Fit::kBestFit, "b0-r0-n2:3 b0-r0-n0:1"},
      {4, Fit::kLeastFreeCapacity, "b0-r0-n0:1 b0-r0-n1:2 b0-r0-n2:1"},
      {2, Fit::kBestFit, "b0-r0-n1:2"},
  };
  for (const Row& row : rows) {
    GangPlacement p = Place(s, t, Gang({Group("w", 1, row.pods, Required("rack"))}, {}, row.fit));
    ASSERT_TRUE(p.ok()) << p.reason;
    EXPECT_EQ(Layout(s, p), row.layout) << row.pods << " pods, " << FitName(row.fit);
  }
}

TEST_F(TopologyPlacementTest, SlicesAtTheRackLevel) {
  ClusterState s = test::RackCluster(1, 2, 2, 8);
  Occupy(s, "b0-r0-n0", 8);
  Occupy(s, "b0-r0-n1", 2);  // r0: 6 free
  Occupy(s, "b0-r1-n0", 3);
  Occupy(s, "b0-r1-n1", 8);  // r1: 5 free
  const Topology t = Labels(s);
  // Without slices best fit puts 6 in r0 and 2 in r1; slices of 4 per rack split 4 and 4.
  GangPlacement plain = Place(s, t, Gang({Group("w", 1, 8, Required("block"))}));
  ASSERT_TRUE(plain.ok()) << plain.reason;
  EXPECT_EQ(PodsPerDomain(t, plain, 1), (std::map<std::string, int>{{"b0/r0", 6}, {"b0/r1", 2}}));
  Constraint sliced{.required = "block", .slice_level = "rack", .slice_size = 4};
  GangPlacement p = Place(s, t, Gang({Group("w", 1, 8, sliced)}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(PodsPerDomain(t, p, 1), (std::map<std::string, int>{{"b0/r0", 4}, {"b0/r1", 4}}));
  // 12 pods hold 11 free GPUs' worth of room in total, but only two whole slices of 4 fit.
  GangPlacement none = Place(s, t, Gang({Group("w", 1, 12, sliced)}));
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.reason.find("3 slices of 4 pods (each within one rack)"), std::string::npos)
      << none.reason;
}

TEST_F(TopologyPlacementTest, SlicesAtTheBlockLevel) {
  ClusterState s = test::RackCluster(2, 2, 1, 8);
  Occupy(s, "b0-r0-n0", 4);  // b0: 12 free
  Occupy(s, "b1-r1-n0", 6);  // b1: 10 free
  const Topology t = Labels(s);
  GangPlacement plain = Place(s, t, Gang({Group("w", 1, 16)}));
  ASSERT_TRUE(plain.ok()) << plain.reason;
  EXPECT_EQ(PodsPerDomain(t, plain, 0), (std::map<std::string, int>{{"b0", 12}, {"b1", 4}}));
  Constraint sliced{.slice_level = "block", .slice_size = 8};
  GangPlacement p = Place(s, t, Gang({Group("w", 1, 16, sliced)}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(PodsPerDomain(t, p, 0), (std::map<std::string, int>{{"b0", 8}, {"b1", 8}}));
}

TEST_F(TopologyPlacementTest, BalancedPlacementSplitsEvenly) {
  // Kueue's example: 12 pods on two domains of 10 free go 6 and 6 rather than 10 and 2.
  ClusterState s;
  for (int r = 0; r < 2; ++r) {
    const std::string name = absl::StrCat("b0-r", r, "-n0");
    ASSERT_OK(s.AddNode(test::GpuNode(name, 10,
                                      {{test::kBlockLabel, "b0"},
                                       {test::kRackLabel, absl::StrCat("r", r)},
                                       {kHostnameLabel, name}})));
  }
  const Topology t = Labels(s);
  GangPlacement greedy = Place(s, t, Gang({Group("w", 1, 12, Preferred("rack"))}));
  ASSERT_TRUE(greedy.ok()) << greedy.reason;
  EXPECT_EQ(Layout(s, greedy), "b0-r0-n0:10 b0-r1-n0:2");
  Constraint balanced = Preferred("rack");
  balanced.balanced = true;
  GangPlacement even = Place(s, t, Gang({Group("w", 1, 12, balanced)}));
  ASSERT_TRUE(even.ok()) << even.reason;
  EXPECT_EQ(Layout(s, even), "b0-r0-n0:6 b0-r1-n0:6");
  EXPECT_EQ(even.groups[0].level, 0);  // kept in the block, one level above the preferred racks
}

TEST_F(TopologyPlacementTest, RequiredLevelNoDomainSatisfiesStaysPendingNamingTheLevel) {
  ClusterState s = test::RackCluster(1, 2, 2, 8);
  const Topology t = Labels(s);
  // Racks hold two 8-GPU pods each; three must share one rack.
  GangPlacement p = Place(s, t, Gang({Group("w", 8, 3, Required("rack"))}));
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.reason, "topology: no rack domain takes the gang: 3 pods (the most one takes is 2)");
  // Preferred instead: the block holds them, 2 + 1.
  GangPlacement q = Place(s, t, Gang({Group("w", 8, 3, Preferred("rack"))}));
  ASSERT_TRUE(q.ok()) << q.reason;
  EXPECT_EQ(q.groups[0].level, 0);
  EXPECT_EQ(PodsPerDomain(t, q, 1), (std::map<std::string, int>{{"b0/r0", 2}, {"b0/r1", 1}}));
}

TEST_F(TopologyPlacementTest, PreferredSpreadsOverTheTopologyWhenNoBlockHoldsIt) {
  ClusterState s = test::RackCluster(2, 1, 2, 8);
  const Topology t = Labels(s);
  GangPlacement p = Place(s, t, Gang({Group("w", 8, 3, Preferred("rack"))}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.groups[0].level, -1);
  GangPlacement q = Place(s, t, Gang({Group("w", 8, 5, Preferred("rack"))}));
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.reason.find("the topology takes 4"), std::string::npos) << q.reason;
}

TEST_F(TopologyPlacementTest, KaiRequiredBlockPreferredRack) {
  ClusterState s = test::RackCluster(2, 2, 2, 8);
  Occupy(s, "b0-r0-n0", 1);
  const Topology t = Labels(s);
  Constraint kai{.required = "block", .preferred = "rack"};
  GangPlacement two = Place(s, t, Gang({Group("w", 8, 2, kai)}));
  ASSERT_TRUE(two.ok()) << two.reason;
  EXPECT_EQ(two.groups[0].level, 1);  // one rack: the first whole one (b0/r0 has a GPU taken)
  EXPECT_EQ(t.DomainPath(1, two.groups[0].domain), "b0/r1");
  GangPlacement three = Place(s, t, Gang({Group("w", 8, 3, kai)}));
  ASSERT_TRUE(three.ok()) << three.reason;
  EXPECT_EQ(three.groups[0].level, 0);  // no rack holds 3: the tightest block (b0 holds 3)
  EXPECT_EQ(t.DomainPath(0, three.groups[0].domain), "b0");
  GangPlacement five = Place(s, t, Gang({Group("w", 8, 5, kai)}));
  EXPECT_FALSE(five.ok());
  EXPECT_NE(five.reason.find("no block domain"), std::string::npos) << five.reason;
}

TEST_F(TopologyPlacementTest, VolcanoHardModeHonoursHighestTierAllowed) {
  ClusterState s = test::RackCluster(2, 2, 2, 8);
  std::vector<HyperNode> hn;
  for (int b = 0; b < 2; ++b) {
    HyperNode block{absl::StrCat("block", b), 2, {}};
    for (int r = 0; r < 2; ++r) {
      const std::string rack = absl::StrCat("b", b, "-r", r);
      hn.push_back({rack, 1, {{HyperNodeMember::Kind::kNode, "", rack + "-.*", {}}}});
      block.members.push_back({HyperNodeMember::Kind::kHyperNode, rack, "", {}});
    }
    hn.push_back(block);
  }
  absl::StatusOr<Topology> t = Topology::FromHyperNodes(s, hn);
  ASSERT_OK(t);
  auto volcano = [&](const std::string& mode, int tier, int pods) {
    absl::StatusOr<Constraint> c = VolcanoConstraint(*t, mode, tier);
    EXPECT_OK(c);
    return Place(s, *t, Gang({Group("w", 8, pods, *c)}));
  };
  EXPECT_TRUE(volcano("hard", 1, 2).ok());
  GangPlacement tight = volcano("hard", 1, 3);
  EXPECT_FALSE(tight.ok());
  EXPECT_NE(tight.reason.find("no tier-1 domain"), std::string::npos) << tight.reason;
  GangPlacement wider = volcano("hard", 2, 3);
  ASSERT_TRUE(wider.ok()) << wider.reason;
  EXPECT_EQ(wider.groups[0].level, 0);  // one tier-2 HyperNode
  GangPlacement soft = volcano("soft", 1, 6);
  ASSERT_TRUE(soft.ok()) << soft.reason;
  EXPECT_EQ(soft.groups[0].level, -1);  // soft: spread when no HyperNode holds it
  EXPECT_FALSE(VolcanoConstraint(*t, "hard", 7).ok());
  EXPECT_FALSE(VolcanoConstraint(*t, "firm", 1).ok());
}

TEST_F(TopologyPlacementTest, LeaderAndWorkersShareOneRackAndSeeEachOther) {
  ClusterState s = test::RackCluster(1, 2, 2, 8);
  Occupy(s, "b0-r0-n0", 1);
  const Topology t = Labels(s);
  // r0 takes the 8-GPU leader only on n1, and then one 4-GPU worker on n0: not both workers.
  GangPlacement p = Place(s, t, Gang({Group("leader", 8, 1), Group("workers", 4, 2)}, Required("rack")));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(t.DomainPath(p.level, p.domain), "b0/r1");
  EXPECT_EQ(Layout(s, p), "b0-r1-n0:1 b0-r1-n1:2");
  // Three workers fit no rack beside the leader.
  GangPlacement q = Place(s, t, Gang({Group("leader", 8, 1), Group("workers", 4, 3)}, Required("rack")));
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.reason.find("no rack domain takes the whole gang"), std::string::npos) << q.reason;
}

TEST_F(TopologyPlacementTest, WorkersKeepTheirOwnNarrowerLevelInsideTheGangsDomain) {
  ClusterState s = test::RackCluster(1, 2, 2, 8);
  Occupy(s, "b0-r0-n0", 8);
  const Topology t = Labels(s);
  GangPlacement p = Place(s, t,
                          Gang({Group("leader", 8, 1), Group("workers", 8, 2, Required("rack"))},
                               Required("block")));
  ASSERT_TRUE(p.ok()) << p.reason;
  // The workers need a whole rack (r1); the leader, placed first, takes r0's free node.
  EXPECT_EQ(Layout(s, p), "b0-r0-n1:1 b0-r1-n0:1 b0-r1-n1:1");
}

TEST_F(TopologyPlacementTest, NvlinkPartitionsDecideANodesCount) {
  // Node a has one GPU taken in every NVLink pair: 4 GPUs free but no pair. A 2-GPU pod must take
  // a whole pair, so only node b takes them, exactly as a plan on the node would say.
  ClusterState s;
  for (const char* name : {"a", "b"}) {
    Node n = test::MakeNode(absl::StrFormat(
        R"({"name":"%s","cpu":"64","memory":"512Gi","gpus":{"count":8,"model":"H100","memory":"80Gi"},
            "nvlink_groups":[[0,1],[2,3],[4,5],[6,7],[0,1,2,3],[4,5,6,7],[0,1,2,3,4,5,6,7]]})",
        name));
    n.labels = {{test::kRackLabel, name}};
    ASSERT_OK(s.AddNode(n));
  }
  for (int m : {0, 2, 4, 6}) {
    ASSERT_OK(s.Reserve(test::MakeAllocation(absl::StrFormat(
        R"({"pod":"x%d","node":"a","cpu":"1","memory":"1Gi","devices":[{"minor":%d,"core":100,"memory":"80Gi"}]})",
        m, m))));
  }
  absl::StatusOr<Topology> t = Topology::FromLabels(s, {{"rack", test::kRackLabel}});
  ASSERT_OK(t);
  const std::vector<int> caps = GroupCapacities(s, *t, Group("w", 2, 4), *binpack_);
  EXPECT_EQ(caps[s.FindNode("a")], 0);
  EXPECT_EQ(caps[s.FindNode("b")], 4);
  GangPlacement p = Place(s, *t, Gang({Group("w", 2, 3, Required("rack"))}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(Layout(s, p), "b:3");
}

TEST_F(TopologyPlacementTest, FragmentationCompletesPartlyUsedRacksAndKeepsAWholeOne) {
  // One block: r0 untouched (4 nodes), r1 and r2 with one node busy each (3 free nodes).
  ClusterState s = test::RackCluster(1, 3, 4, 8);
  Occupy(s, "b0-r1-n0", 1);
  Occupy(s, "b0-r2-n0", 1);
  const Topology t = Labels(s);
  // Six whole-node pods in the block: best fit takes the largest rack first and breaks r0;
  // the fragmentation rule fills r1 and r2 and leaves r0 whole for a later rack-sized gang.
  GangPlacement bf = Place(s, t, Gang({Group("w", 8, 6, Required("block"))}));
  ASSERT_TRUE(bf.ok()) << bf.reason;
  EXPECT_EQ(PodsPerDomain(t, bf, 1), (std::map<std::string, int>{{"b0/r0", 4}, {"b0/r1", 2}}));
  GangPlacement fr = Place(s, t, Gang({Group("w", 8, 6, Required("block"))}, {}, Fit::kFragmentation));
  ASSERT_TRUE(fr.ok()) << fr.reason;
  EXPECT_EQ(PodsPerDomain(t, fr, 1), (std::map<std::string, int>{{"b0/r1", 3}, {"b0/r2", 3}}));
  // A rack-sized gang of three: best fit and fragmentation both take a partly used rack that it
  // completes (r1), not the untouched one.
  for (Fit fit : {Fit::kBestFit, Fit::kFragmentation}) {
    GangPlacement p = Place(s, t, Gang({Group("w", 8, 3, Required("rack"))}, {}, fit));
    ASSERT_TRUE(p.ok()) << p.reason;
    EXPECT_EQ(t.DomainPath(1, p.groups[0].domain), "b0/r1") << FitName(fit);
  }
}

TEST_F(TopologyPlacementTest, DomainFragmentationCountsWhatNoFutureGangCanUse) {
  const GangSizes sizes = {{1, 0.25}, {2, 0.25}, {4, 0.25}, {8, 0.25}};
  EXPECT_DOUBLE_EQ(DomainFragmentation(8, sizes), 0.0);    // every size fits exactly
  EXPECT_DOUBLE_EQ(DomainFragmentation(5, sizes), 0.25 * (1 + 1 + 5));
  EXPECT_DOUBLE_EQ(DomainFragmentation(0, sizes), 0.0);
  // Placing 3 of 8 fragments more than completing a domain of 3.
  const std::vector<double> score =
      ScoreDomains({{8, 1, true}, {3, 1, false}}, 3, sizes);
  EXPECT_GT(score[1], score[0]);
}

TEST_F(TopologyPlacementTest, NodesOutsideTheTopologyAreNeverUsed) {
  ClusterState s = test::RackCluster(1, 1, 1, 8);
  ASSERT_OK(s.AddNode(test::GpuNode("unlabelled", 8, {})));
  const Topology t = Labels(s);
  GangPlacement p = Place(s, t, Gang({Group("w", 8, 2)}));
  EXPECT_FALSE(p.ok());
  EXPECT_NE(p.reason.find("the topology takes 1"), std::string::npos) << p.reason;
}

TEST_F(TopologyPlacementTest, BadRequestsAreOneLineErrors) {
  ClusterState s = test::RackCluster(1, 1, 2, 8);
  const Topology t = Labels(s);
  auto error = [&](GangRequest r, const std::string& part) {
    absl::StatusOr<GangPlacement> p = placer_.Choose(s, t, r, *binpack_);
    EXPECT_TRUE(test::IsError(p, absl::StatusCode::kInvalidArgument, {part}));
  };
  error(Gang({Group("w", 1, 2, Required("spine"))}), "gang g group w: unknown topology level spine (levels: block, rack, host)");
  error(Gang({Group("w", 1, 2)}, Preferred("zone")), "unknown topology level zone");
  error(Gang({Group("w", 1, 2, Constraint{.required = "rack", .preferred = "block"})}),
        "preferred level block is wider than required level rack");
  error(Gang({Group("w", 1, 6, Constraint{.slice_level = "rack", .slice_size = 4})}),
        "6 pods do not split into slices of 4");
  error(Gang({Group("w", 1, 0)}), "count 0");
  error(Gang({}), "no groups");
  // A topology built for other nodes is refused rather than misread.
  ClusterState other = test::RackCluster(1, 1, 3, 8);
  EXPECT_TRUE(test::IsError(placer_.Choose(other, t, Gang({Group("w", 1, 1)}), *binpack_),
                            absl::StatusCode::kFailedPrecondition, {"another set of nodes"}));
}

}  // namespace
}  // namespace gpufleet::topology
