// The reclaim rules of a queue tree (queues/reclaim_rules.h), the preemption ledger and the usage
// history that time-aware fairness reads.
#include <vector>

#include "gpufleet/queues/division.h"
#include "gpufleet/queues/kueue_quota.h"
#include "gpufleet/queues/preemption_ledger.h"
#include "gpufleet/queues/reclaim_rules.h"
#include "gpufleet/queues/usage_history.h"
#include "gtest/gtest.h"

namespace gpufleet::queues {
namespace {

QueueSpec Q(const std::string& name, const std::string& parent, double gpu_quota,
            double guarantee = 0, double weight = 1) {
  QueueSpec s;
  s.name = name;
  s.parent = parent;
  s.weight = weight;
  s.quota.resources["gpu"].quota = gpu_quota;
  s.quota.resources["gpu"].guarantee = guarantee;
  return s;
}

// A tree with GPU allocations and requests at its leaves, its fair shares and a judge.
struct Fixture {
  QueueTree tree;
  std::vector<double> allocated, request, fair_share;
  std::unique_ptr<KueueQuota> kueue;
  std::unique_ptr<ReclaimJudge> judge;

  Fixture(std::vector<QueueSpec> specs, DivisionPolicy policy, double gpus,
          std::map<std::string, std::pair<double, double>> leaves)  // name -> (held, wanted)
      : tree(*QueueTree::Build(std::move(specs))) {
    const int R = tree.num_resources();
    allocated.assign(tree.size() * R, 0.0);
    request.assign(tree.size() * R, 0.0);
    kueue = std::make_unique<KueueQuota>(tree);
    for (const auto& [name, hw] : leaves) {
      std::vector<double> held(R, 0.0), want(R, 0.0);
      held[kGpu] = hw.first;
      want[kGpu] = hw.first + hw.second;
      AddAlongPath(tree, tree.Find(name), held, 1, &allocated);
      AddAlongPath(tree, tree.Find(name), want, 1, &request);
      kueue->AddUsage(tree.Find(name), held);
    }
    std::vector<double> capacity(R, 0.0);
    capacity[kGpu] = gpus;
    ShareDivider().Divide(policy, {&tree, capacity, request, {}, 0}, &fair_share);
    ReclaimSettings settings;
    settings.policy = policy;
    judge = std::make_unique<ReclaimJudge>(TreeView{&tree, allocated, fair_share, kueue.get()},
                                           settings);
  }
  std::vector<double> Gpus(double g) const {
    std::vector<double> v(tree.num_resources(), 0.0);
    v[kGpu] = g;
    return v;
  }
  std::string Begin(const char* q, double g, int priority = 0) {
    return judge->Begin(tree.Find(q), Gpus(g), priority);
  }
  bool Take(const char* q, double g, int priority = 0, std::string* why = nullptr) {
    return judge->Take(tree.Find(q), Gpus(g), priority, why);
  }
};

TEST(QueueTreeReclaimTest, KaiTakesBackOnlyWhatIsAboveDeserved) {
  // a and b deserve 2 each of 4; b runs 4 one-GPU tasks, a waits for 2.
  Fixture f({Q("a", "", 2), Q("b", "", 2)}, DivisionPolicy::kKai, 4, {{"a", {0, 2}}, {"b", {4, 0}}});
  EXPECT_EQ(f.Begin("a", 1), "");
  std::string why;
  EXPECT_TRUE(f.Take("b", 1));
  EXPECT_TRUE(f.Take("b", 1));
  EXPECT_FALSE(f.Take("b", 1, 0, &why));  // b would fall below its 2
  EXPECT_NE(why.find("below its deserved"), std::string::npos) << why;
  EXPECT_FALSE(f.Take("a", 1));  // its own queue: not a reclaim
}

TEST(QueueTreeReclaimTest, KaiReclaimerStaysWithinItsFairShare) {
  Fixture f({Q("a", "", 2), Q("b", "", 2)}, DivisionPolicy::kKai, 4, {{"a", {2, 2}}, {"b", {2, 2}}});
  EXPECT_NE(f.Begin("a", 1), "");  // a already holds its fair share of 2
}

TEST(QueueTreeReclaimTest, KaiJudgesAtTheLeveledQueues) {
  // Departments d1 (quota 4) and d2 (quota 4) of 8 GPUs; d2's team b1 borrowed everything.
  // a1 (d1) reclaims from b1: d2 may go down to its 4, and b1 (quota 1) only to its 1.
  Fixture f({Q("d1", "", 4), Q("d2", "", 4), Q("a1", "d1", 2), Q("a2", "d1", 2), Q("b1", "d2", 1),
             Q("b2", "d2", 3)},
            DivisionPolicy::kKai, 8, {{"a1", {0, 4}}, {"b1", {8, 0}}});
  EXPECT_EQ(f.Begin("a1", 1), "");
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(f.Take("b1", 1)) << i;
  std::string why;
  EXPECT_FALSE(f.Take("b1", 1, 0, &why));
  EXPECT_NE(why.find("queue d2 would fall below"), std::string::npos) << why;
}

TEST(QueueTreeReclaimTest, NeverBelowGuarantee) {
  // Volcano's capacity rules: b deserves 1 but is guaranteed 3.
  std::vector<QueueSpec> specs = {Q("a", "", 3), Q("b", "", 3, 3)};
  specs[1].quota.resources["gpu"].quota = 1;  // deserved below the guarantee is still floored at 3
  Fixture f(specs, DivisionPolicy::kCapacity, 6, {{"a", {0, 3}}, {"b", {6, 0}}});
  EXPECT_EQ(f.Begin("a", 1), "");
  EXPECT_TRUE(f.Take("b", 1));
  EXPECT_TRUE(f.Take("b", 1));
  EXPECT_TRUE(f.Take("b", 1));
  EXPECT_FALSE(f.Take("b", 1));  // b keeps its guarantee of 3
}

TEST(QueueTreeReclaimTest, UnreclaimableQueuesKeepTheirWork) {
  std::vector<QueueSpec> specs = {Q("a", "", 2), Q("b", "", 0)};
  specs[1].reclaimable = false;
  Fixture f(specs, DivisionPolicy::kKai, 4, {{"a", {0, 2}}, {"b", {4, 0}}});
  EXPECT_EQ(f.Begin("a", 1), "");
  EXPECT_FALSE(f.Take("b", 1));
}

std::vector<QueueSpec> Cohort(double wa, double wb) {
  std::vector<QueueSpec> s = {Q("org", "", 0), Q("a", "org", 2, 0, wa), Q("b", "org", 2, 0, wb),
                              Q("c", "org", 6)};
  return s;
}

TEST(QueueTreeReclaimTest, DrsFairSharingStrategies) {
  // Lendable 10; b borrows 4 (DRS 0.4), a asks to borrow 1 (DRS with it 0.1): a may take from b
  // until their shares cross.
  Fixture f(Cohort(1, 1), DivisionPolicy::kDrs, 10, {{"a", {2, 3}}, {"b", {6, 0}}});
  EXPECT_EQ(f.Begin("a", 1), "");
  EXPECT_TRUE(f.Take("b", 1));  // b 0.3 after, a 0.1
  // b borrowing 1 cannot preempt a that borrows 1 with the strict rule: 0.2 is not < 0.1.
  Fixture g(Cohort(1, 1), DivisionPolicy::kDrs, 10, {{"a", {3, 0}}, {"b", {3, 1}}});
  EXPECT_EQ(g.Begin("b", 1), "");
  std::string why;
  EXPECT_FALSE(g.Take("a", 1, 0, &why));
  EXPECT_NE(why.find("not below"), std::string::npos) << why;
  // Weights: b with weight 4 borrowing 4 has DRS 0.1; a (weight 1) borrowing 1 more: 0.1 <= 0.1.
  Fixture h(Cohort(1, 4), DivisionPolicy::kDrs, 10, {{"a", {2, 1}}, {"b", {6, 0}}});
  EXPECT_EQ(h.Begin("a", 1), "");
  EXPECT_FALSE(h.Take("b", 1));  // after: b 0.075 < a 0.1
}

TEST(QueueTreeReclaimTest, DrsReclaimWithinCohortAndBorrowingThreshold) {
  std::vector<QueueSpec> specs = Cohort(1, 1);
  specs[1].quota.reclaim_within_cohort = CohortPreemption::kNever;
  Fixture never(specs, DivisionPolicy::kDrs, 10, {{"a", {0, 2}}, {"b", {6, 0}}});
  EXPECT_NE(never.Begin("a", 1), "");
  specs[1].quota.reclaim_within_cohort = CohortPreemption::kAny;
  specs[1].quota.borrow_within_cohort = true;
  specs[1].quota.borrow_priority_threshold = 5;
  // a borrows 3 already (DRS 0.3 -> 0.4 with one more); b borrows 1: fair sharing says no, but
  // borrowWithinCohort lets a take b's work of priority below a's and at most 5.
  Fixture borrow(specs, DivisionPolicy::kDrs, 10, {{"a", {5, 1}}, {"b", {3, 0}}});
  EXPECT_EQ(borrow.Begin("a", 1, /*priority=*/10), "");
  EXPECT_FALSE(borrow.Take("b", 1, /*priority=*/6));
  EXPECT_TRUE(borrow.Take("b", 1, /*priority=*/5));
}

TEST(QueueTreeReclaimTest, DrsOnlyWithinACohort) {
  Fixture f({Q("a", "", 2), Q("b", "", 2)}, DivisionPolicy::kDrs, 4, {{"a", {0, 2}}, {"b", {4, 0}}});
  EXPECT_EQ(f.Begin("a", 1), "");
  EXPECT_FALSE(f.Take("b", 1));
}

TEST(PreemptionLedgerTest, RefusesCycles) {
  PreemptionLedger l;
  l.Record("a", "b");
  l.Record("b", "c");
  EXPECT_TRUE(l.WouldCycle("b", "a"));   // a preempted b
  EXPECT_TRUE(l.WouldCycle("c", "a"));   // a -> b -> c
  EXPECT_FALSE(l.WouldCycle("a", "c"));  // same direction: fine
  EXPECT_TRUE(l.WouldCycle("a", "a"));
  l.Prune([](const std::string& j) { return j != "b"; });
  EXPECT_FALSE(l.WouldCycle("c", "a"));  // the chain went with b
  EXPECT_EQ(l.num_edges(), 0u);
}

TEST(UsageHistoryTest, NormalizedDecayedUsage) {
  const std::vector<std::string> names = {"a", "b"};
  std::vector<double> held = {3, 1};  // one resource: a holds 3 of 10, b 1
  std::vector<double> cap = {10};
  for (UsageParams p : {UsageParams{0, 0}, UsageParams{3600, 0}, UsageParams{600, 7200}}) {
    UsageHistory h;
    for (double t = 0; t <= 36000; t += 60) h.Advance(t, names, 1, held, cap, p);
    std::vector<double> out;
    h.Normalized(names, 1, 36000, p, &out);
    EXPECT_NEAR(out[0], 0.3, 1e-9) << p.half_life;
    EXPECT_NEAR(out[1], 0.1, 1e-9) << p.half_life;
  }
  // With decay, recent usage weighs more: a held everything early, b everything late.
  UsageParams p{600, 0};
  UsageHistory h;
  for (double t = 0; t <= 7200; t += 60) {
    std::vector<double> now = t < 3600 ? std::vector<double>{10, 0} : std::vector<double>{0, 10};
    h.Advance(t, names, 1, now, cap, p);
  }
  std::vector<double> out;
  h.Normalized(names, 1, 7200, p, &out);
  EXPECT_GT(out[1], 0.9);
  EXPECT_LT(out[0], 0.1);
  // A window forgets: after an hour of nothing with a half-hour window, no usage is left.
  UsageParams w{0, 1800};
  UsageHistory hw;
  for (double t = 0; t <= 7200; t += 60) {
    std::vector<double> now = t <= 3600 ? std::vector<double>{10, 0} : std::vector<double>{0, 0};
    hw.Advance(t, names, 1, now, cap, w);
  }
  hw.Normalized(names, 1, 7200, w, &out);
  EXPECT_NEAR(out[0], 0, 1e-9);
}

}  // namespace
}  // namespace gpufleet::queues
