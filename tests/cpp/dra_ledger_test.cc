// The engine's DRA ledger (cpp/gpufleet/engine/dra_ledger.h): a device a pod holds in the
// accounting is in use for claims, a device shared by capacity shrinks by what pods hold, held
// claims take their devices from later claims, giving a holding back and restoring it are exact,
// and a node's class key changes with what claims hold there.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpufleet/engine/dra_ledger.h"

namespace gpufleet::engine {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Two whole DRA devices (0, 1: the node's GPUs 0 and 1) and one shared by capacity (2: GPU 2,
// capacity slots 0 = cores in milli-percent, 1 = memory in milli-bytes).
std::shared_ptr<const dra::NodeTable> Table() {
  auto t = std::make_shared<dra::NodeTable>();
  t->capacity_total = {100 * 1000, 80 * kGiB * 1000};
  t->capacity_device = {2, 2};
  t->unit_counters = {{}, {}, {}};
  t->unit_device = {0, 1, 2};
  for (int d = 0; d < 3; ++d) t->devices.push_back({false, d == 2, {}, d, -1, -1});
  return t;
}

// `count` whole devices of 0 and 1, or one share of device 2 with `cores` percent.
std::shared_ptr<const dra::ClaimRequests> Requests(int count, int cores = 0) {
  auto r = std::make_shared<dra::ClaimRequests>();
  r->num_claims = 1;
  r->num_groups = 1;
  dra::Request q;
  q.count = count;
  if (cores > 0) {
    q.candidates.push_back({2, false, {{0, cores * 1000}, {1, 8 * kGiB * 1000}}, -1});
  } else {
    q.candidates = {{0, false, {}, -1}, {1, false, {}, -1}};
  }
  r->requests = {q};
  r->twin_signature = {0, 0, -1};
  return r;
}

struct Fixture {
  Node node;
  std::vector<int64_t> core = {0, 0, 0}, memory = {0, 0, 0};
  DraLedger ledger;

  Fixture() {
    node.name = "n1";
    for (int m = 0; m < 3; ++m) node.devices.push_back(Device{kGpu, m, "", "H100", true, 100, 80 * kGiB});
    ledger.AddTable(Table());
    DraNodeClaims n;
    n.profile = 0;
    n.held = dra::EmptyHeld(*Table());
    n.counterparts = {{{0, 100, 80 * kGiB, -1, -1}}, {{1, 100, 80 * kGiB, -1, -1}}, {{2, 0, 0, 0, 1}}};
    n.claim_usage.assign(3, {0, 0});
    EXPECT_TRUE(ledger.SetNode("n1", std::move(n)).ok());
  }
  NodeView View() const {
    NodeView v;
    v.node = &node;
    v.used_core = core.data();
    v.used_memory = memory.data();
    return v;
  }
  void Task(const std::string& name, std::shared_ptr<const dra::ClaimRequests> r) {
    EXPECT_TRUE(ledger.SetTask(name, {std::move(r)}, {""}).ok());
  }
  // Holds the task's answer and adds its grants to the accounting, as a statement does.
  void Place(const std::string& task) {
    dra::Result r = ledger.Solve(task, "n1", View());
    ASSERT_EQ(r.verdict, dra::Verdict::kAllocated) << r.reason;
    const DraHolding& h = ledger.Hold(task, "n1", r.choices, View());
    for (size_t g = 0; g < h.grants.size(); ++g) {
      core[h.grant_devices[g]] += h.grants[g].core;
      memory[h.grant_devices[g]] += h.grants[g].memory_bytes;
    }
  }
};

TEST(DraLedger, APodsGpuIsInUseAndAClaimTakesItsGpuWhole) {
  Fixture f;
  f.core[0] = 50;  // a pod's share of GPU 0
  f.Task("a", Requests(1));
  f.Task("b", Requests(1));
  f.Place("a");
  const DraHolding& h = f.ledger.holdings().at("a");
  ASSERT_EQ(h.grants.size(), 1u);
  EXPECT_EQ(h.grants[0].minor, 1);
  EXPECT_EQ(h.grants[0].core, 100);
  EXPECT_EQ(h.grants[0].memory_bytes, 80 * kGiB);
  // GPU 0 is the pod's, GPU 1 the claim's: nothing is left for b.
  EXPECT_EQ(f.ledger.Solve("b", "n1", f.View()).verdict, dra::Verdict::kUnallocatable);
  // Given back (and out of the accounting), GPU 1 serves b; restored, it does not.
  std::optional<DraHolding> back = f.ledger.Release("a");
  ASSERT_TRUE(back.has_value());
  f.core[1] = f.memory[1] = 0;
  EXPECT_EQ(f.ledger.Solve("b", "n1", f.View()).verdict, dra::Verdict::kAllocated);
  f.ledger.Restore("a", *back);
  f.core[1] = 100;
  f.memory[1] = 80 * kGiB;
  EXPECT_EQ(f.ledger.Solve("b", "n1", f.View()).verdict, dra::Verdict::kUnallocatable);
  EXPECT_FALSE(f.ledger.Release("b").has_value());
}

TEST(DraLedger, ASharedGpuShrinksByWhatPodsHoldButNotByWhatClaimsHold) {
  Fixture f;
  f.core[2] = 30;  // a pod's 30% of GPU 2
  f.Task("big", Requests(1, 80));
  f.Task("share", Requests(1, 40));
  f.Task("rest", Requests(1, 30));
  EXPECT_EQ(f.ledger.Solve("big", "n1", f.View()).verdict, dra::Verdict::kUnallocatable);
  f.Place("share");  // 40% by a claim: its grant joins the accounting
  EXPECT_EQ(f.ledger.holdings().at("share").grants[0].core, 40);
  EXPECT_EQ(f.core[2], 70);
  // 30% is left: counted once (the claim's 40% is not taken for a pod's as well).
  EXPECT_EQ(f.ledger.Solve("rest", "n1", f.View()).verdict, dra::Verdict::kAllocated);
}

TEST(DraLedger, RememberedAnswersFollowWhatIsHeldOnEachNode) {
  Fixture f;
  DraNodeClaims twin;
  twin.profile = 0;
  twin.held = dra::EmptyHeld(*Table());
  twin.counterparts = {{{0, 100, 80 * kGiB, -1, -1}}, {{1, 100, 80 * kGiB, -1, -1}}, {{2, 0, 0, 0, 1}}};
  twin.claim_usage.assign(3, {0, 0});
  ASSERT_TRUE(f.ledger.SetNode("n2", std::move(twin)).ok());
  f.Task("two", Requests(2));
  // Alike and empty: the same answer on both nodes, asked again or not.
  const dra::Result first = f.ledger.Solve("two", "n1", f.View());
  ASSERT_EQ(first.verdict, dra::Verdict::kAllocated);
  EXPECT_EQ(f.ledger.Solve("two", "n2", f.View()).choices.size(), first.choices.size());
  // A pod on n1's GPU 0 changes n1's question only.
  f.core[0] = 10;
  EXPECT_EQ(f.ledger.Solve("two", "n1", f.View()).verdict, dra::Verdict::kUnallocatable);
  f.core[0] = 0;
  EXPECT_EQ(f.ledger.Solve("two", "n2", f.View()).verdict, dra::Verdict::kAllocated);
  // So does a claim held there.
  f.Task("one", Requests(1));
  f.Place("one");
  EXPECT_EQ(f.ledger.Solve("two", "n1", f.View()).verdict, dra::Verdict::kUnallocatable);
}

TEST(DraLedger, TheClassKeyTellsNodesApartByWhatClaimsHoldThere) {
  Fixture f;
  DraNodeClaims twin;
  twin.profile = 0;
  twin.held = dra::EmptyHeld(*Table());
  twin.counterparts = {{{0, 100, 80 * kGiB, -1, -1}}, {{1, 100, 80 * kGiB, -1, -1}}, {{2, 0, 0, 0, 1}}};
  twin.claim_usage.assign(3, {0, 0});
  DraNodeClaims swapped = twin;  // its DRA devices 0 and 1 are the other GPUs
  std::swap(swapped.counterparts[0], swapped.counterparts[1]);
  ASSERT_TRUE(f.ledger.SetNode("n2", std::move(twin)).ok());
  ASSERT_TRUE(f.ledger.SetNode("n3", std::move(swapped)).ok());
  auto key = [&](const std::string& node) {
    std::vector<int64_t> k;
    f.ledger.AppendClassKey(node, k);
    return k;
  };
  EXPECT_EQ(key("n1"), key("n2"));
  EXPECT_NE(key("n1"), key("n3"));
  EXPECT_NE(key("n1"), key("elsewhere"));  // a node without devices for claims
  // A claim held on n1 (its own share of GPU 2, which the accounting would see too) sets n1
  // apart until it is given back.
  f.Task("share", Requests(1, 40));
  f.Place("share");
  EXPECT_NE(key("n1"), key("n2"));
  ASSERT_TRUE(f.ledger.Release("share").has_value());
  EXPECT_EQ(key("n1"), key("n2"));
}

TEST(DraLedger, TheObjectivePicksTheDevices) {
  Fixture f;
  f.Task("share", Requests(1, 40));
  f.Place("share");  // GPU 2 is open now
  // Either GPU 0 whole or 10% of GPU 2.
  auto either = std::make_shared<dra::ClaimRequests>(*Requests(1));
  either->requests[0].candidates = {{0, false, {}, -1}, {2, false, {{0, 10 * 1000}, {1, kGiB * 1000}}, -1}};
  f.Task("either", either);
  EXPECT_EQ(f.ledger.objective(), dra::Objective::kPack);
  // pack fills the GPU already open; first takes the first candidate, as Kubernetes does (the
  // answer pack left behind is not reused).
  EXPECT_EQ(f.ledger.Solve("either", "n1", f.View()).choices.at(0).device, 2);
  f.ledger.SetObjective(dra::Objective::kFirst);
  EXPECT_EQ(f.ledger.Solve("either", "n1", f.View()).choices.at(0).device, 0);
}

TEST(DraLedger, BadSetupIsRefused) {
  Fixture f;
  DraNodeClaims n;
  n.profile = 3;
  EXPECT_FALSE(f.ledger.SetNode("n2", n).ok());
  EXPECT_FALSE(f.ledger.SetTask("t", {}, {}).ok());
  auto bad = std::make_shared<dra::ClaimRequests>(*Requests(1));
  bad->twin_signature.pop_back();
  EXPECT_FALSE(f.ledger.SetTask("t", {bad}, {""}).ok());
  EXPECT_EQ(f.ledger.Solve("nobody", "n1", f.View()).verdict, dra::Verdict::kUnallocatable);
}

}  // namespace
}  // namespace gpufleet::engine
