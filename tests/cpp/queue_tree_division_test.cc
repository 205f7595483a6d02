// Fair shares as the anchors compute them: KAI Scheduler's resource division and Kueue's
// Dominant Resource Share, restated from their documented and tested examples (KAI's
// resource_division tests, Kueue's fair_sharing tests), plus the tree-level divisions.
#include <cmath>
#include <vector>

#include "gpufleet/queues/division.h"
#include "gpufleet/queues/kueue_quota.h"
#include "gpufleet/queues/queue_tree.h"
#include "gtest/gtest.h"

namespace gpufleet::queues {
namespace {

KaiEntry Entry(double deserved, double request, double weight, double fair_share = 0,
               double limit = kUnlimited, int priority = 0, int order = 0) {
  KaiEntry e;
  e.deserved = deserved;
  e.request = request;
  e.weight = weight;
  e.fair_share = fair_share;
  e.limit = limit;
  e.priority = priority;
  e.order = order;
  return e;
}

// --- One queue, within its quota (KAI "single queue within quota") --------------------------

struct SingleCase {
  const char* name;
  double deserved, request, limit, total, want_share, want_remaining;
};

TEST(KaiDivisionTest, SingleQueueWithinQuota) {
  const SingleCase cases[] = {
      {"requested, nothing left", 3, 2, kUnlimited, 2, 2, 0},
      {"requested, one left", 3, 2, kUnlimited, 3, 2, 1},
      {"never above the limit", 3, 2, 2, 3, 2, 1},
      {"deserved even beyond capacity", 3, 2, kUnlimited, 1, 2, 0},
      {"up to the full quota", 3, 5, kUnlimited, 7, 3, 4},
      {"fractional deserved", 1.5, 2, kUnlimited, 2, 1.5, 0.5},
      {"fractional request", 3, 1.5, kUnlimited, 2, 1.5, 0.5},
      {"nothing when deserved is zero", 0, 2, kUnlimited, 2, 0, 2},
  };
  for (const SingleCase& c : cases) {
    std::vector<KaiEntry> e = {Entry(c.deserved, c.request, /*weight=*/0, 0, c.limit)};
    const double remaining = KaiDivide(c.total, 0, e);
    EXPECT_DOUBLE_EQ(e[0].fair_share, c.want_share) << c.name;
    EXPECT_DOUBLE_EQ(remaining, c.want_remaining) << c.name;
  }
}

// --- One queue over its quota (KAI "single queue over quota": deserved 3, holds 3, asks 5) ---

TEST(KaiDivisionTest, SingleQueueOverQuota) {
  struct Case {
    const char* name;
    double total, weight, request, deserved, held, limit, want_share, want_remaining;
  } const cases[] = {
      {"requested, nothing left", 2, 1, 5, 3, 3, kUnlimited, 5, 0},
      {"requested, one left", 3, 1, 5, 3, 3, kUnlimited, 5, 1},
      {"never above the limit", 2, 1, 5, 3, 3, 4, 4, 1},
      {"weight zero gets nothing", 2, 0, 5, 3, 3, kUnlimited, 3, 2},
      {"fraction if requested", 2, 1, 4.5, 3, 3, kUnlimited, 4.5, 0.5},
      {"the remainder fraction", 0.5, 1, 5, 3, 3, kUnlimited, 3.5, 0},
      {"deserved zero", 6, 1, 5, 0, 0, kUnlimited, 5, 1},
      {"nothing to divide", 0, 1, 5, 3, 3, kUnlimited, 3, 0},
      {"weight zero, plenty to divide", 10, 0, 5, 3, 3, kUnlimited, 3, 10},
  };
  for (const auto& c : cases) {
    std::vector<KaiEntry> e = {Entry(c.deserved, c.request, c.weight, c.held, c.limit)};
    const double remaining = KaiDivideOverQuota(c.total, 0, e);
    EXPECT_DOUBLE_EQ(e[0].fair_share, c.want_share) << c.name;
    EXPECT_DOUBLE_EQ(remaining, c.want_remaining) << c.name;
  }
}

// --- Two queues, deserved 2 each, weight 2, asking 6 (KAI "two queues" table) -----------------

TEST(KaiDivisionTest, TwoQueues) {
  struct Case {
    const char* name;
    double total;
    double weight1, weight2, request1, request2, limit1;
    int priority1, priority2;
    double want1, want2, want_remaining;
  } const cases[] = {
      {"many GPUs available", 15, 2, 2, 6, 6, kUnlimited, 0, 0, 6, 6, 3},
      {"exactly what is asked", 12, 2, 2, 6, 6, kUnlimited, 0, 0, 6, 6, 0},
      {"proportional to weight", 8, 1, 3, 6, 6, kUnlimited, 0, 0, 3, 5, 0},
      {"not above the limit", 12, 2, 2, 6, 6, 5, 0, 0, 5, 6, 1},
      // 7 over quota by 1:4 is 1.4 and 5.6: floors 1 and 5, the leftover unit to the larger
      // fraction (0.6).
      {"leftover to the largest fraction", 11, 1, 4, 10, 10, kUnlimited, 0, 0, 3, 8, 0},
      // 3.5 each: the leftover unit goes to the older queue.
      {"leftover to the older queue", 11, 2, 2, 6, 6, kUnlimited, 0, 0, 6, 5, 0},
      {"priority does not affect deserved", 4, 2, 2, 6, 6, kUnlimited, 1, 2, 2, 2, 0},
      {"priority does affect over-quota", 6, 2, 2, 6, 6, kUnlimited, 1, 2, 2, 4, 0},
      {"priority before weight", 6, 100, 1, 6, 6, kUnlimited, 1, 2, 2, 4, 0},
  };
  for (const auto& c : cases) {
    std::vector<KaiEntry> e = {
        Entry(2, c.request1, c.weight1, 0, c.limit1, c.priority1, /*order=*/0),
        Entry(2, c.request2, c.weight2, 0, kUnlimited, c.priority2, /*order=*/1)};
    const double remaining = KaiDivide(c.total, 0, e);
    EXPECT_DOUBLE_EQ(e[0].fair_share, c.want1) << c.name;
    EXPECT_DOUBLE_EQ(e[1].fair_share, c.want2) << c.name;
    EXPECT_DOUBLE_EQ(remaining, c.want_remaining) << c.name;
  }
}

TEST(KaiDivisionTest, RemainderWithPriorities) {
  // Two priority-2 queues (deserved 2, asking 5) and a priority-1 queue asking nothing share 5:
  // 4 deserved, the one left is half each, floored to 0, and goes whole to the older queue.
  std::vector<KaiEntry> e = {Entry(2, 5, 2, 0, kUnlimited, 2, 0), Entry(2, 5, 2, 0, kUnlimited, 2, 1),
                             Entry(1, 0, 2, 0, kUnlimited, 1, 2)};
  EXPECT_DOUBLE_EQ(KaiDivide(5, 0, e), 0);
  EXPECT_DOUBLE_EQ(e[0].fair_share, 3);
  EXPECT_DOUBLE_EQ(e[1].fair_share, 2);
  EXPECT_DOUBLE_EQ(e[2].fair_share, 0);
}

TEST(KaiDivisionTest, NoRoundingLeftoverToLowerPriorityWhileHigherWait) {
  std::vector<KaiEntry> e = {Entry(1, 5, 1, 1, kUnlimited, 2, 0), Entry(1, 5, 1, 1, kUnlimited, 2, 1),
                             Entry(1, 5, 1, 1, kUnlimited, 1, 2)};
  EXPECT_DOUBLE_EQ(KaiDivideOverQuota(3, 0, e), 0);
  EXPECT_DOUBLE_EQ(e[2].fair_share, 1);
  EXPECT_DOUBLE_EQ(e[0].fair_share + e[1].fair_share, 5);
  EXPECT_GE(e[0].fair_share, 2);
  EXPECT_GE(e[1].fair_share, 2);
}

// --- CPU in millicores (KAI "setResourceShare - CPU") -----------------------------------------

TEST(KaiDivisionTest, CpuTables) {
  {
    std::vector<KaiEntry> e = {Entry(3000, 2000, 3000)};
    EXPECT_DOUBLE_EQ(KaiDivide(3000, 0, e), 1000);
    EXPECT_DOUBLE_EQ(e[0].fair_share, 2000);
  }
  {
    std::vector<KaiEntry> e = {Entry(3000, 2000, 3000)};
    EXPECT_DOUBLE_EQ(KaiDivide(1000, 0, e), 0);
    EXPECT_DOUBLE_EQ(e[0].fair_share, 2000);  // deserved, even beyond capacity
  }
  {
    // A queue with no deserved cpu and no weight gets nothing back of what it runs.
    std::vector<KaiEntry> e = {Entry(5000, 10000, 5000, 0, kUnlimited, 0, 0),
                               Entry(0, 5000, 0, 0, kUnlimited, 0, 1)};
    EXPECT_DOUBLE_EQ(KaiDivide(10000, 0, e), 0);
    EXPECT_DOUBLE_EQ(e[0].fair_share, 10000);
    EXPECT_DOUBLE_EQ(e[1].fair_share, 0);
  }
  struct Case {
    const char* name;
    double total, r1, r2, r3, limit1, want1, want2, want3;
  } const cases[] = {
      {"over subscription: each its deserved", 10000, 5000, 5000, 5000, kUnlimited, 5000, 5000, 5000},
      {"over quota: each what it asks", 18000, 6000, 6000, 6000, kUnlimited, 6000, 6000, 6000},
      {"unneeded deserved goes to the one asking", 10000, 7000, 2000, 2000, kUnlimited, 6000, 2000, 2000},
      {"deserved first for all", 10000, 7000, 5000, 2000, kUnlimited, 5000, 5000, 2000},
      {"within the limit", 10000, 7000, 2000, 2000, 7000, 6000, 2000, 2000},
  };
  for (const auto& c : cases) {
    std::vector<KaiEntry> e = {Entry(5000, c.r1, 5000, 0, c.limit1, 0, 0),
                               Entry(5000, c.r2, 5000, 0, kUnlimited, 0, 1),
                               Entry(5000, c.r3, 5000, 0, kUnlimited, 0, 2)};
    EXPECT_DOUBLE_EQ(KaiDivide(c.total, 0, e), 0) << c.name;
    EXPECT_DOUBLE_EQ(e[0].fair_share, c.want1) << c.name;
    EXPECT_DOUBLE_EQ(e[1].fair_share, c.want2) << c.name;
    EXPECT_DOUBLE_EQ(e[2].fair_share, c.want3) << c.name;
  }
}

// --- Time-aware fairness: weight moved by past usage (KAI: max(0, w + k (w - usage))) ---------

TEST(KaiDivisionTest, PastUsageMovesOverQuotaWeight) {
  // Equal weights (0.5 each after normalizing), usage 0.8 and 0.2, k = 1: share weights 0.2 and
  // 0.8 of 10 GPUs.
  std::vector<KaiEntry> e = {Entry(0, 10, 1, 0, kUnlimited, 0, 0), Entry(0, 10, 1, 0, kUnlimited, 0, 1)};
  e[0].usage = 0.8;
  e[1].usage = 0.2;
  EXPECT_DOUBLE_EQ(KaiDivide(10, 1.0, e), 0);
  EXPECT_DOUBLE_EQ(e[0].fair_share, 2);
  EXPECT_DOUBLE_EQ(e[1].fair_share, 8);
  // k = 0: usage does not count.
  std::vector<KaiEntry> f = {Entry(0, 10, 1, 0, kUnlimited, 0, 0), Entry(0, 10, 1, 0, kUnlimited, 0, 1)};
  f[0].usage = 0.8;
  EXPECT_DOUBLE_EQ(KaiDivide(10, 0.0, f), 0);
  EXPECT_DOUBLE_EQ(f[0].fair_share, 5);
  // Share weights never go negative: usage 1 with k = 3 leaves 0.
  std::vector<KaiEntry> g = {Entry(0, 10, 1, 0, kUnlimited, 0, 0), Entry(0, 10, 1, 0, kUnlimited, 0, 1)};
  g[0].usage = 1.0;
  EXPECT_DOUBLE_EQ(KaiDivide(10, 3.0, g), 0);
  EXPECT_DOUBLE_EQ(g[0].fair_share, 0);
  EXPECT_DOUBLE_EQ(g[1].fair_share, 10);
}

// --- Kueue's Dominant Resource Share (Kueue fair_sharing tests) -------------------------------

QueueSpec Spec(const std::string& name, const std::string& parent,
               std::map<std::string, ResourceQuota> resources, double weight = 1) {
  QueueSpec s;
  s.name = name;
  s.parent = parent;
  s.weight = weight;
  s.quota.resources = std::move(resources);
  return s;
}

ResourceQuota Nominal(double q, double lending = kUnlimited) {
  ResourceQuota r;
  r.quota = q;
  r.lending_limit = lending;
  return r;
}

// Kueue reports DRS in thousandths, rounded down.
int Thousandths(double drs) { return std::isinf(drs) ? -1 : static_cast<int>(std::floor(drs * 1000 + 1e-9)); }

TEST(KueueDrsTest, Table) {
  struct Case {
    const char* name;
    bool cohort;
    double weight;
    double cq_cpu, cq_gpu, cq_gpu_lend, lender_cpu, lender_gpu, lender_gpu_lend;
    double used_cpu, used_gpu, add_cpu, add_gpu;
    int want;  // thousandths; -1: infinite
  } const cases[] = {
      {"no cohort", false, 1, 2000, 5, kUnlimited, 0, 0, kUnlimited, 1000, 2, 0, 0, 0},
      {"usage below nominal", true, 1, 2000, 5, kUnlimited, 8000, 5, kUnlimited, 1000, 2, 0, 0, 0},
      {"usage above nominal", true, 1, 2000, 5, kUnlimited, 8000, 5, kUnlimited, 3000, 7, 0, 0, 200},
      {"one resource above nominal", true, 1, 2000, 5, kUnlimited, 8000, 5, kUnlimited, 3000, 3, 0, 0, 100},
      {"with the workload", true, 1, 2000, 5, kUnlimited, 8000, 5, kUnlimited, 1000, 2, 4000, 4, 300},
      {"a resource with nothing lendable", true, 1, 2000, 2, 0, 8000, 64, 0, 1000, 1, 4000, 4, 300},
      {"weight 2", true, 2, 0, 5, kUnlimited, 0, 5, kUnlimited, 0, 7, 0, 0, 100},
      {"weight 0.5", true, 0.5, 0, 5, kUnlimited, 0, 5, kUnlimited, 0, 7, 0, 0, 400},
      {"weight 0", true, 0, 0, 5, kUnlimited, 0, 10, kUnlimited, 0, 7, 0, 0, -1},
  };
  for (const auto& c : cases) {
    std::vector<QueueSpec> specs;
    const std::string parent = c.cohort ? "cohort" : "";
    if (c.cohort) specs.push_back(Spec("cohort", "", {}));
    specs.push_back(Spec("cq", parent,
                         {{"cpu", Nominal(c.cq_cpu)}, {"gpu", Nominal(c.cq_gpu, c.cq_gpu_lend)}},
                         c.weight));
    if (c.cohort)
      specs.push_back(Spec("lender", parent,
                           {{"cpu", Nominal(c.lender_cpu)},
                            {"gpu", Nominal(c.lender_gpu, c.lender_gpu_lend)}}));
    auto tree = QueueTree::Build(specs);
    ASSERT_TRUE(tree.ok()) << c.name << ": " << tree.status();
    KueueQuota kq(*tree);
    const int cq = tree->Find("cq");
    kq.AddUsage(cq, kCpu, c.used_cpu);
    kq.AddUsage(cq, kGpu, c.used_gpu);
    std::vector<double> extra(tree->num_resources(), 0.0);
    extra[kCpu] = c.add_cpu;
    extra[kGpu] = c.add_gpu;
    EXPECT_EQ(Thousandths(kq.Drs(cq, extra)), c.want) << c.name;
  }
}

TEST(KueueQuotaTest, BorrowingAndLendingLimits) {
  // A cohort of two queues: a lends at most 4 of its 10 GPUs (keeps 6), b may borrow at most 2.
  ResourceQuota a_gpu = Nominal(10, 4);
  ResourceQuota b_gpu = Nominal(10);
  b_gpu.borrowing_limit = 2;
  auto tree = QueueTree::Build({Spec("cohort", "", {}), Spec("a", "cohort", {{"gpu", a_gpu}}),
                                Spec("b", "cohort", {{"gpu", b_gpu}})});
  ASSERT_TRUE(tree.ok()) << tree.status();
  KueueQuota kq(*tree);
  const int a = tree->Find("a"), b = tree->Find("b"), cohort = tree->Find("cohort");
  EXPECT_DOUBLE_EQ(kq.subtree_quota(cohort, kGpu), 14);  // 4 lent by a + 10 of b
  EXPECT_DOUBLE_EQ(kq.guaranteed(a, kGpu), 6);
  EXPECT_DOUBLE_EQ(kq.Available(a, kGpu), 20);  // its 6 kept + all 14 of the cohort
  EXPECT_DOUBLE_EQ(kq.Available(b, kGpu), 12);  // 10 + at most 2 borrowed
  kq.AddUsage(b, kGpu, 12);
  EXPECT_DOUBLE_EQ(kq.usage(cohort, kGpu), 12);
  EXPECT_DOUBLE_EQ(kq.Available(b, kGpu), 0);
  EXPECT_DOUBLE_EQ(kq.Available(a, kGpu), 8);  // 6 kept + 2 left in the cohort
  kq.AddUsage(a, kGpu, 7);                     // 6 from its own, 1 from the cohort
  EXPECT_DOUBLE_EQ(kq.usage(cohort, kGpu), 13);
  kq.AddUsage(a, kGpu, -7);
  EXPECT_DOUBLE_EQ(kq.usage(cohort, kGpu), 12);
}

// --- Division over a tree ---------------------------------------------------------------------

struct TreeCase {
  std::vector<QueueSpec> specs;
  std::map<std::string, double> gpu_request;  // leaves
};

std::vector<double> DivideGpus(DivisionPolicy policy, const QueueTree& tree,
                               const std::map<std::string, double>& leaf_requests, double gpus,
                               double k = 0, std::vector<double> usage = {}) {
  const int R = tree.num_resources();
  std::vector<double> request(tree.size() * R, 0.0);
  for (const auto& [name, g] : leaf_requests) {
    std::vector<double> amounts(R, 0.0);
    amounts[kGpu] = g;
    AddAlongPath(tree, tree.Find(name), amounts, 1, &request);
  }
  std::vector<double> capacity(R, 0.0);
  capacity[kGpu] = gpus;
  ShareDivider divider;
  std::vector<double> fs;
  divider.Divide(policy, {&tree, capacity, request, usage, k}, &fs);
  std::vector<double> gpu(tree.size());
  for (int q = 0; q < tree.size(); ++q) gpu[q] = fs[q * R + kGpu];
  return gpu;
}

ResourceQuota Gpu(double quota, double limit = kUnlimited, double weight = -1) {
  ResourceQuota r;
  r.quota = quota;
  r.limit = limit;
  r.over_quota_weight = weight;
  return r;
}

TEST(TreeDivisionTest, KaiDividesTopDown) {
  // Two departments (quota 4 each of 12), teams below; team a1 idle.
  auto tree = QueueTree::Build({Spec("d1", "", {{"gpu", Gpu(4)}}), Spec("d2", "", {{"gpu", Gpu(4)}}),
                                Spec("a1", "d1", {{"gpu", Gpu(2)}}), Spec("a2", "d1", {{"gpu", Gpu(2)}}),
                                Spec("b1", "d2", {{"gpu", Gpu(1)}}),
                                Spec("b2", "d2", {{"gpu", Gpu(3, 4)}})});
  ASSERT_TRUE(tree.ok()) << tree.status();
  auto fs = DivideGpus(DivisionPolicy::kKai, *tree, {{"a2", 10}, {"b1", 10}, {"b2", 10}}, 12);
  auto at = [&](const char* n) { return fs[tree->Find(n)]; };
  EXPECT_DOUBLE_EQ(at("d1"), 6);  // 4 deserved + half of the 4 left
  EXPECT_DOUBLE_EQ(at("d2"), 6);
  EXPECT_DOUBLE_EQ(at("a1"), 0);  // asks for nothing
  EXPECT_DOUBLE_EQ(at("a2"), 6);  // its 2 + all of what its department has over
  EXPECT_DOUBLE_EQ(at("b2"), 4);  // 3 + half of the 2 left: 4, its limit
  EXPECT_DOUBLE_EQ(at("b1"), 2);  // 1 + the other half
}

TEST(TreeDivisionTest, DrsSharesBorrowingByWeight) {
  // A cohort with 2 GPUs of its own and three queues of nominal 2 (weights 1, 3, 1); c is idle.
  // The cohort holds 8: a and b get their 2 each, and the 4 left (c's 2 and the cohort's 2) go
  // by weight, 1 : 3.
  auto tree = QueueTree::Build({Spec("cohort", "", {{"gpu", Gpu(2)}}),
                                Spec("a", "cohort", {{"gpu", Gpu(2)}}, 1),
                                Spec("b", "cohort", {{"gpu", Gpu(2)}}, 3),
                                Spec("c", "cohort", {{"gpu", Gpu(2)}}, 1)});
  ASSERT_TRUE(tree.ok()) << tree.status();
  auto fs = DivideGpus(DivisionPolicy::kDrs, *tree, {{"a", 10}, {"b", 10}}, 100);
  EXPECT_DOUBLE_EQ(fs[tree->Find("cohort")], 8);  // its subtree quota, though the cluster has 100
  EXPECT_DOUBLE_EQ(fs[tree->Find("a")], 3);       // 2 + 4 x 1/4
  EXPECT_DOUBLE_EQ(fs[tree->Find("b")], 5);       // 2 + 4 x 3/4
  EXPECT_DOUBLE_EQ(fs[tree->Find("c")], 0);
}

TEST(TreeDivisionTest, CapacityDeservedThenWeight) {
  auto tree = QueueTree::Build({Spec("a", "", {{"gpu", Gpu(6, 8)}}), Spec("b", "", {{"gpu", Gpu(2)}}),
                                Spec("c", "", {{"gpu", Gpu(2)}})});
  ASSERT_TRUE(tree.ok()) << tree.status();
  auto fs = DivideGpus(DivisionPolicy::kCapacity, *tree, {{"a", 20}, {"b", 20}, {"c", 1}}, 16);
  EXPECT_DOUBLE_EQ(fs[tree->Find("a")], 8);  // 6 + 2, at its capability
  EXPECT_DOUBLE_EQ(fs[tree->Find("c")], 1);
  EXPECT_DOUBLE_EQ(fs[tree->Find("b")], 7);  // 2 + the rest
}

TEST(TreeDivisionTest, WaterFillMatchesBisection) {
  // Weighted water-filling against a bisection on the level, on random cases.
  uint64_t seed = 12345;
  auto next = [&] { seed = seed * 6364136223846793005ULL + 1442695040888963407ULL; return (seed >> 33) % 1000; };
  for (int round = 0; round < 500; ++round) {
    const int n = 1 + next() % 6;
    std::vector<double> w(n), caps(n);
    for (int i = 0; i < n; ++i) {
      w[i] = (next() % 4) * 0.5;
      caps[i] = next() % 3 == 0 ? kUnlimited : next() % 20;
    }
    const double total = next() % 50;
    std::vector<double> out;
    WaterFill(total, w, caps, &out);
    double sum = 0, cap_sum = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_LE(out[i], caps[i] + 1e-9);
      EXPECT_GE(out[i], 0);
      sum += out[i];
      cap_sum += caps[i];
    }
    EXPECT_NEAR(sum, std::min(total, cap_sum), 1e-6);
    // Weighted queues first: every weighted queue below its cap has level x weight.
    double lo = 0, hi = 1e6;
    for (int it = 0; it < 200; ++it) {
      const double mid = (lo + hi) / 2;
      double s = 0;
      for (int i = 0; i < n; ++i)
        if (w[i] > 0) s += std::min(caps[i], mid * w[i]);
      (s > total ? hi : lo) = mid;
    }
    for (int i = 0; i < n; ++i)
      if (w[i] > 0) EXPECT_NEAR(out[i], std::min(caps[i], lo * w[i]), 1e-4);
  }
}

}  // namespace
}  // namespace gpufleet::queues
