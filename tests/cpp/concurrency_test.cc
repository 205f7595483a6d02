// The guarded objects from many std::threads: the lock, the strategy cache, GuardedCluster and
// GuardedScheduler. Each test checks invariants and compares with a serial replay of what the
// threads committed, in commit order; the GPUFLEET_TSAN build runs this file under
// ThreadSanitizer, which also reports any access the locks fail to order.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/accounting/object_lock.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "gpufleet/io/snapshot.h"
#include "gpufleet/placement/placer.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace gpufleet {
namespace {

using test::MakeNode;
using test::MakePod;

constexpr int kThreads = 6;

// Runs f(0) .. f(n-1) on n threads that start together, so their calls overlap.
template <typename F>
void RunThreads(int n, F f) {
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      f(t);
    });
  for (auto& th : threads) th.join();
}

// Four nodes of four GPUs: few enough that threads contend for the same cards.
GuardedCluster SmallCluster() {
  ClusterState s;
  for (int i = 0; i < 4; ++i) {
    absl::Status st = s.AddNode(MakeNode(absl::StrCat(
        R"({"name":"n)", i,
        R"(","cpu":"64","memory":"256Gi","gpus":{"count":4,"model":"V100","memory":"16Gi"}})")));
    EXPECT_TRUE(st.ok()) << st;
  }
  // Assume times from a counter: a serial replay in the same order gets the same times.
  auto tick = std::make_shared<int64_t>(0);
  s.set_clock([tick] { return ++*tick; });
  return GuardedCluster(std::move(s));
}

// A shared pod (a fraction of one GPU) or a whole-GPU pod, by index.
Pod PodNumber(const std::string& prefix, int k) {
  if (k % 3 == 0)
    return MakePod(absl::StrCat(R"({"name":")", prefix, k,
                                R"(","requests":{"cpu":"1","nvidia.com/gpu":1}})"));
  return MakePod(absl::StrCat(R"({"name":")", prefix, k,
                              R"(","requests":{"cpu":"1","koordinator.sh/gpu-core":)",
                              25 + 10 * (k % 4), R"(,"koordinator.sh/gpu-memory-ratio":)",
                              25 + 10 * (k % 4), "}}"));
}

std::map<std::string, std::string> Placements(const ClusterState& s) {
  std::map<std::string, std::string> out;
  for (const Allocation* a : s.Allocations()) {
    std::string devices;
    for (const DeviceGrant& g : a->devices) absl::StrAppend(&devices, g.minor, ":", g.core, " ");
    out[a->pod] = a->node + " " + devices;
  }
  return out;
}

// --- ObjectLock ------------------------------------------------------------------------------

TEST(ObjectLockTest, KnowsItsWriterAndLetsReadersShare) {
  ObjectLock lock;
  EXPECT_FALSE(lock.HeldByThisThread());
  {
    std::unique_lock<ObjectLock> w(lock);
    EXPECT_TRUE(lock.HeldByThisThread());
    bool other_sees_held = true, other_got_it = true;
    std::thread([&] {
      other_sees_held = lock.HeldByThisThread();
      other_got_it = lock.try_lock_shared();
    }).join();
    EXPECT_FALSE(other_sees_held);
    EXPECT_FALSE(other_got_it);
  }
  EXPECT_FALSE(lock.HeldByThisThread());
  std::shared_lock<ObjectLock> r(lock);
  EXPECT_FALSE(lock.HeldByThisThread());
  bool second_reader = false, writer = true;
  std::thread([&] {
    second_reader = lock.try_lock_shared();
    if (second_reader) lock.unlock_shared();
    writer = lock.try_lock();
  }).join();
  EXPECT_TRUE(second_reader);
  EXPECT_FALSE(writer);
}

// Threads t = 0 .. n-1 each hold lock t alone, then ask for lock t+1 (mod n) shared or exclusive:
// a ring. Exactly one of them (the last to ask) must be refused with an error naming the locks
// of the ring, and the others must then get what they asked for.
void RingOfWaits(int n, bool shared) {
  std::vector<std::unique_ptr<ObjectLock>> locks;
  for (int t = 0; t < n; ++t) locks.push_back(std::make_unique<ObjectLock>("engine"));
  std::latch all_hold(n);
  std::atomic<int> refused{0}, got{0};
  std::vector<std::string> messages(n);
  RunThreads(n, [&](int t) {
    std::unique_lock<ObjectLock> mine(*locks[t]);
    all_hold.arrive_and_wait();
    ObjectLock& next = *locks[(t + 1) % n];
    try {
      if (shared) {
        std::shared_lock<ObjectLock> theirs(next);
      } else {
        std::unique_lock<ObjectLock> theirs(next);
      }
      ++got;
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
      messages[t] = e.what();
      ++refused;
    }
  });
  EXPECT_EQ(refused.load(), 1);
  EXPECT_EQ(got.load(), n - 1);
  for (int t = 0; t < n; ++t) {
    if (messages[t].empty()) continue;
    for (const auto& lock : locks) EXPECT_NE(messages[t].find(lock->name()), std::string::npos) << messages[t];
    EXPECT_NE(messages[t].find("held by this thread"), std::string::npos) << messages[t];
  }
}

TEST(ObjectLockTest, RefusesToCloseARingOfWaitsInsteadOfDeadlocking) {
  for (int round = 0; round < 20; ++round) {
    RingOfWaits(2, /*shared=*/false);
    RingOfWaits(2, /*shared=*/true);
    RingOfWaits(3, /*shared=*/round % 2 == 0);
  }
}

TEST(ObjectLockTest, RefusesToWaitForItselfAndNamesItsKind) {
  ObjectLock lock("cluster");
  EXPECT_EQ(lock.name().rfind("cluster #", 0), 0u) << lock.name();
  std::unique_lock<ObjectLock> w(lock);
  EXPECT_THROW(lock.lock_shared(), std::system_error);
  EXPECT_THROW(lock.lock(), std::system_error);
  EXPECT_TRUE(lock.HeldByThisThread());
}

TEST(ObjectLockTest, AChainThatEndsElsewhereJustWaits) {
  // t0 holds a and waits for b; t1 holds b, waits for c held by t2, which lets go: no ring, so
  // nobody is refused and everybody gets through.
  ObjectLock a, b, c;
  std::latch holding(3);
  std::atomic<int> refused{0};
  RunThreads(3, [&](int t) {
    ObjectLock& own = t == 0 ? a : t == 1 ? b : c;
    std::unique_lock<ObjectLock> mine(own);
    holding.arrive_and_wait();
    try {
      if (t == 0) {
        std::unique_lock<ObjectLock> wait(b);
      } else if (t == 1) {
        std::shared_lock<ObjectLock> wait(c);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } catch (const std::system_error&) {
      ++refused;
    }
  });
  EXPECT_EQ(refused.load(), 0);
}

// --- StrategyCache ---------------------------------------------------------------------------

TEST(StrategyCacheTest, OneInstancePerSpecPerCache) {
  StrategyCache a, b;
  std::vector<PlacementStrategy*> got(kThreads);
  RunThreads(kThreads, [&](int t) { got[t] = a.Get("fgd").value(); });
  for (PlacementStrategy* p : got) EXPECT_EQ(p, got[0]);
  EXPECT_NE(b.Get("fgd").value(), got[0]);
  EXPECT_FALSE(a.Get("no-such-strategy").ok());
}

struct Thing {
  static constexpr char kKind[] = "thing";
  int v = 0;
};

TEST(ConcurrentRegistryTest, RegisterWhileOthersCreate) {
  Registry<Thing> r;
  auto factory = [](int v) {
    return [v](const Params&) -> absl::StatusOr<std::unique_ptr<Thing>> {
      auto t = std::make_unique<Thing>();
      t->v = v;
      return t;
    };
  };
  r.Register({.name = "base"}, factory(7));
  RunThreads(kThreads, [&](int t) {
    for (int k = 0; k < 50; ++k) {
      if (t == 0) r.Register({.name = absl::StrCat("n", k)}, factory(k));
      auto made = r.Create("base");
      ASSERT_TRUE(made.ok());
      EXPECT_EQ((*made)->v, 7);
      EXPECT_FALSE(r.Names().empty());
    }
  });
  EXPECT_EQ(r.Names().size(), 51u);
  EXPECT_TRUE(r.DuplicateNames().empty());
}

// --- GuardedCluster --------------------------------------------------------------------------

// What one thread committed, logged under the cluster's lock, so the log is the commit order.
struct Op {
  bool place;
  Pod pod;
};

// Threads place and release on shared cards with a strategy; every step is logged inside the
// same exclusive section that commits it. Replaying the log serially on a fresh cluster must give
// the same placements: for fgd (memo) and random (one generator drawn in commit order) too.
void ExpectSerialReplay(const std::string& strategy) {
  GuardedCluster cluster = SmallCluster();
  const PlacementStrategy& st = *cluster.Strategy(strategy).value();
  std::vector<Op> log;
  std::atomic<int> errors{0};
  RunThreads(kThreads, [&](int t) {
    std::vector<std::string> mine;
    for (int k = 0; k < 30; ++k) {
      Pod pod = PodNumber(absl::StrCat("t", t, "-"), k);
      const bool release = k % 4 == 3 && !mine.empty();
      cluster.Write([&](ClusterState& s) {
        if (release) {
          Pod gone;
          gone.name = mine.back();
          if (!s.Release(gone.name).ok()) ++errors;
          log.push_back({false, gone});
          mine.pop_back();
        } else {
          Placement r = test::PlaceWith(cluster.placer(), s, pod, st, true);
          if (r.ok()) mine.push_back(pod.name);
          log.push_back({true, pod});
        }
        return 0;
      });
      if (k % 5 == 0)
        EXPECT_TRUE(cluster.Read([](const ClusterState& s) { return s.CheckInvariants(); }).ok());
    }
  });
  EXPECT_EQ(errors.load(), 0);
  GuardedCluster serial = SmallCluster();
  const PlacementStrategy& serial_st = *serial.Strategy(strategy).value();
  serial.Write([&](ClusterState& s) {
    for (const Op& op : log) {
      if (op.place) test::PlaceWith(serial.placer(), s, op.pod, serial_st, true);
      else EXPECT_TRUE(s.Release(op.pod.name).ok());
    }
    return 0;
  });
  auto got = cluster.Read([](const ClusterState& s) { return Placements(s); });
  auto want = serial.Read([](const ClusterState& s) { return Placements(s); });
  EXPECT_EQ(got, want) << strategy;
  EXPECT_TRUE(cluster.Equals(serial)) << strategy;
  EXPECT_TRUE(cluster.Read([](const ClusterState& s) { return s.CheckInvariants(); }).ok());
}

TEST(GuardedClusterTest, ParallelWritesEqualSerialReplayBinpack) { ExpectSerialReplay("binpack"); }
TEST(GuardedClusterTest, ParallelWritesEqualSerialReplayFgd) { ExpectSerialReplay("fgd"); }
TEST(GuardedClusterTest, ParallelWritesEqualSerialReplayRandom) {
  ExpectSerialReplay("random(seed=3)");
}

// The public calls (PlaceMany, Place over named nodes, Release) racing with readers that take
// snapshots: every snapshot loads back into a sound state, and at the end the allocations are
// exactly what was placed and not released.
TEST(GuardedClusterTest, PlaceManyReleaseAndSnapshotsRace) {
  GuardedCluster cluster = SmallCluster();
  std::vector<std::vector<std::string>> kept(kThreads);
  std::atomic<int> bad_snapshots{0}, failed_releases{0};
  std::atomic<bool> writing{true};
  std::thread reader([&] {
    while (writing.load()) {
      std::string text = cluster.Read([](const ClusterState& s) { return SaveSnapshot(s); });
      absl::StatusOr<ClusterState> back = LoadSnapshot(text);
      if (!back.ok() || !back->CheckInvariants().ok()) ++bad_snapshots;
    }
  });
  RunThreads(kThreads, [&](int t) {
    for (int round = 0; round < 6; ++round) {
      std::vector<Pod> pods;
      for (int k = 0; k < 4; ++k) pods.push_back(PodNumber(absl::StrCat("t", t, "r", round, "-"), k));
      std::vector<int> where = cluster.PlaceMany(pods, t % 2 ? "fgd" : "binpack").value();
      for (size_t k = 0; k < pods.size(); ++k)
        if (where[k] >= 0) kept[t].push_back(pods[k].name);
      Pod extra = PodNumber(absl::StrCat("t", t, "x"), round);
      std::vector<std::string> nodes = {"n1", "n3"};
      absl::StatusOr<Placement> one = cluster.Place(extra, "spread", true, &nodes);
      ASSERT_TRUE(one.ok());
      if (one->ok()) kept[t].push_back(extra.name);
      // Give back half of what this thread holds.
      for (size_t k = 0; k < kept[t].size() / 2; ++k) {
        const std::string name = kept[t].back();
        kept[t].pop_back();
        if (!cluster.Write([&](ClusterState& s) { return s.Release(name); }).ok()) ++failed_releases;
      }
    }
  });
  writing = false;
  reader.join();
  EXPECT_EQ(bad_snapshots.load(), 0);
  EXPECT_EQ(failed_releases.load(), 0);
  std::vector<std::string> expected;
  for (const auto& names : kept) expected.insert(expected.end(), names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> held = cluster.Read([](const ClusterState& s) {
    std::vector<std::string> out;
    for (const Allocation* a : s.Allocations()) out.push_back(a->pod);
    return out;
  });
  EXPECT_EQ(held, expected);
  EXPECT_FALSE(held.empty());
  EXPECT_TRUE(cluster.Read([](const ClusterState& s) { return s.CheckInvariants(); }).ok());
}

// Separate clusters never share a strategy: each placing in parallel with fgd or random gives
// what it gives alone.
TEST(GuardedClusterTest, SeparateClustersPlaceAsTheyWouldAlone) {
  for (const std::string strategy : {"fgd", "random(seed=11)"}) {
    std::vector<Pod> pods;
    for (int k = 0; k < 40; ++k) pods.push_back(PodNumber("p", k));
    GuardedCluster alone = SmallCluster();
    const std::vector<int> want = alone.PlaceMany(pods, strategy).value();
    const auto want_placements = alone.Read([](const ClusterState& s) { return Placements(s); });
    std::vector<GuardedCluster> clusters;
    for (int t = 0; t < kThreads; ++t) clusters.push_back(SmallCluster());
    std::vector<std::vector<int>> got(kThreads);
    RunThreads(kThreads, [&](int t) {
      for (size_t k = 0; k < pods.size(); ++k) {
        auto r = clusters[t].PlaceMany({pods[k]}, strategy);
        got[t].push_back(r.value()[0]);
      }
    });
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(got[t], want) << strategy << " thread " << t;
      EXPECT_EQ(clusters[t].Read([](const ClusterState& s) { return Placements(s); }),
                want_placements);
    }
  }
}

// Readers share the lock, so what they call must change nothing: checks, copies, snapshots and
// plans by a ConcurrentSafe strategy leave every node's version (and so the score cache) alone.
TEST(GuardedClusterTest, ReadersInParallelChangeNothing) {
  GuardedCluster cluster = SmallCluster();
  std::vector<Pod> pods;
  for (int k = 0; k < 10; ++k) pods.push_back(PodNumber("p", k));
  ASSERT_TRUE(cluster.PlaceMany(pods, "binpack").ok());
  auto versions = [&] {
    return cluster.Read([](const ClusterState& s) {
      std::vector<uint64_t> v;
      for (int i = 0; i < s.num_nodes(); ++i) v.push_back(s.node_version(i));
      return v;
    });
  };
  const std::vector<uint64_t> before = versions();
  const std::string text = cluster.Read([](const ClusterState& s) { return SaveSnapshot(s); });
  const PlacementStrategy& binpack = *cluster.Strategy("binpack").value();
  ASSERT_TRUE(binpack.ConcurrentSafe());
  std::atomic<int> bad{0};
  RunThreads(kThreads, [&](int t) {
    for (int k = 0; k < 40; ++k) {
      if (!cluster.Read([](const ClusterState& s) { return s.CheckInvariants(); }).ok()) ++bad;
      if (!cluster.Copy().Read([](const ClusterState& s) { return s.CheckInvariants(); }).ok()) ++bad;
      if (cluster.Read([](const ClusterState& s) { return SaveSnapshot(s); }) != text) ++bad;
      cluster.ReadWith(binpack, [&](const ClusterState& s) {
        return PlanOnNode(s, PodNumber("q", k), k % s.num_nodes(), binpack).ok();
      });
    }
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(versions(), before);
}

TEST(GuardedClusterTest, CopiesAndComparisonsBothWaysDoNotDeadlock) {
  GuardedCluster a = SmallCluster();
  GuardedCluster b = a.Copy();
  RunThreads(4, [&](int t) {
    for (int k = 0; k < 200; ++k) {
      if (t % 2) EXPECT_TRUE(a.Equals(b));
      else EXPECT_TRUE(b.Equals(a));
    }
  });
}

// --- GuardedScheduler ------------------------------------------------------------------------

engine::Job JobNumber(int t, int k) {
  Json j = {{"name", absl::StrCat("j", t, "-", k)},
            {"queue", "default"},
            {"replicas", 1 + k % 2},
            {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", 1}}}};
  return engine::JobFromJson(j).value();
}

// Submits and deletes from several threads while one thread runs cycles and others read; every
// cycle adopts a sound state, readers see whole jobs, and a serial replay of the logged changes
// and cycles gives the same cluster.
TEST(GuardedSchedulerTest, ChangesCyclesAndReadsInterleaveSafely) {
  engine::GuardedScheduler g;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(g.Write([&](engine::Scheduler& s) {
      return s.cluster().AddNode(MakeNode(absl::StrCat(
          R"({"name":"n)", i,
          R"(","cpu":"64","memory":"256Gi","gpus":{"count":4,"model":"V100","memory":"16Gi"}})")));
    }).ok());
  struct Change {
    enum { kSubmit, kDelete, kCycle } kind;
    engine::Job job;
    double now = 0;
  };
  std::vector<Change> log;
  std::atomic<int> errors{0};
  std::atomic<bool> running{true};
  std::thread cycles([&] {
    for (int c = 1; c <= 15; ++c)
      g.Write([&](engine::Scheduler& s) {
        if (!s.RunCycleAt(c).ok()) ++errors;
        log.push_back({Change::kCycle, {}, static_cast<double>(c)});
        return 0;
      });
    running = false;
  });
  std::thread reader([&] {
    while (running.load()) {
      auto jobs = g.Read([](const engine::Scheduler& s) { return s.Jobs(); });
      for (const auto& j : jobs)
        if (j.running > j.tasks) ++errors;
      if (!g.cluster().Read([](const ClusterState& s) { return s.CheckInvariants(); }).ok())
        ++errors;
    }
  });
  RunThreads(3, [&](int t) {
    for (int k = 0; k < 12; ++k) {
      engine::Job job = JobNumber(t, k);
      g.Write([&](engine::Scheduler& s) {
        if (!s.SubmitJob(job).ok()) ++errors;
        log.push_back({Change::kSubmit, job});
        return 0;
      });
      if (k % 3 == 2) {
        engine::Job gone = JobNumber(t, k - 1);
        g.Write([&](engine::Scheduler& s) {
          if (!s.DeleteJob(gone.name).ok()) ++errors;
          log.push_back({Change::kDelete, gone});
          return 0;
        });
      }
    }
  });
  cycles.join();
  reader.join();
  EXPECT_EQ(errors.load(), 0);

  engine::Scheduler serial;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(serial.cluster().AddNode(MakeNode(absl::StrCat(
        R"({"name":"n)", i,
        R"(","cpu":"64","memory":"256Gi","gpus":{"count":4,"model":"V100","memory":"16Gi"}})"))).ok());
  for (const Change& c : log) {
    if (c.kind == Change::kSubmit) EXPECT_TRUE(serial.SubmitJob(c.job).ok());
    if (c.kind == Change::kDelete) EXPECT_TRUE(serial.DeleteJob(c.job.name).ok());
    if (c.kind == Change::kCycle) EXPECT_TRUE(serial.RunCycleAt(c.now).ok());
  }
  EXPECT_EQ(g.cluster().Read([](const ClusterState& s) { return Placements(s); }),
            Placements(serial.cluster()));
  EXPECT_EQ(g.Read([](const engine::Scheduler& s) { return s.cycles(); }), serial.cycles());
}

}  // namespace
}  // namespace gpufleet
