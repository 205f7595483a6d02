// The multi-tenant simulation over a queue tree (sim/queue_sim.h): fair shares reached by
// reclaim, time-aware fairness, conservation, and bad input.
#include <map>
#include <random>

#include "absl/strings/match.h"
#include "gpufleet/sim/queue_sim.h"
#include "gtest/gtest.h"

namespace gpufleet::sim {
namespace {

queues::QueueSpec Q(const std::string& name, const std::string& parent, double gpu_quota,
                    double weight = 1) {
  queues::QueueSpec s;
  s.name = name;
  s.parent = parent;
  s.weight = weight;
  s.quota.resources["gpu"].quota = gpu_quota;
  return s;
}

QueueSimJob J(int64_t id, double submit, double duration, int gpus, int queue) {
  QueueSimJob j;
  j.id = id;
  j.submit_time = submit;
  j.duration = duration;
  j.num_gpu = gpus;
  j.queue = queue;
  return j;
}

TEST(QueueTreeSimTest, ReclaimBringsALateQueueToItsShare) {
  auto tree = queues::QueueTree::Build({Q("a", "", 4), Q("b", "", 4)});
  ASSERT_TRUE(tree.ok());
  std::vector<QueueSimJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back(J(i, 0, 1000, 1, 0));       // a floods at 0
  for (int i = 0; i < 4; ++i) jobs.push_back(J(100 + i, 10, 100, 1, 1));  // b arrives at 10
  QueueSimOptions o;
  auto r = SimulateQueues(*tree, 8, jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 8; i < 12; ++i) EXPECT_DOUBLE_EQ(r->jobs[i].start, 10) << i;  // b's share at once
  EXPECT_EQ(r->preemptions, 4);
  for (const QueueSample& s : r->samples)
    if (s.time == 10) EXPECT_DOUBLE_EQ(s.held, 4) << tree->name(s.queue);
  // Without preemption b waits for a's jobs to end.
  o.preempt = false;
  r = SimulateQueues(*tree, 8, jobs, o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->jobs[8].start, 1000);
  EXPECT_EQ(r->preemptions, 0);
}

TEST(QueueTreeSimTest, ConservesGpusAndWork) {
  auto tree = queues::QueueTree::Build({Q("d1", "", 8), Q("d2", "", 8), Q("a", "d1", 4),
                                        Q("b", "d1", 4), Q("c", "d2", 8)});
  ASSERT_TRUE(tree.ok());
  std::mt19937 rng(7);
  std::vector<QueueSimJob> jobs;
  const int leaves[] = {tree->Find("a"), tree->Find("b"), tree->Find("c")};
  for (int i = 0; i < 400; ++i)
    jobs.push_back(J(i, rng() % 20000, 1 + rng() % 3000, 1 + rng() % 4, leaves[rng() % 3]));
  for (const char* policy : {"kai", "drs", "capacity"}) {
    QueueSimOptions o;
    o.policy = *queues::ParseDivisionPolicy(policy);
    auto r = SimulateQueues(*tree, 16, jobs, o);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_GE(r->jobs[i].start, jobs[i].submit_time) << policy;
      EXPECT_GE(r->jobs[i].end, r->jobs[i].start + jobs[i].duration - 1e-6) << policy;
    }
    std::map<double, double> held;
    for (const QueueSample& s : r->samples)
      if (tree->parent(s.queue) < 0) held[s.time] += s.held;
    for (const auto& [t, h] : held) EXPECT_LE(h, 16) << policy << " at " << t;
  }
}

TEST(QueueTreeSimTest, TimeAwareFairnessAlternatesWholeClusterJobs) {
  // KAI's documented example: 16 GPUs, two queues with no quota and equal weight, each running
  // 16-GPU jobs back to back. Without usage history the first queue keeps the cluster while it
  // has work; with it, the cluster alternates.
  auto tree = queues::QueueTree::Build({Q("q1", "", 0), Q("q2", "", 0)});
  ASSERT_TRUE(tree.ok());
  std::vector<QueueSimJob> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(J(i, 0, 3600, 16, 0));
    jobs.push_back(J(100 + i, 1, 3600, 16, 1));
  }
  QueueSimOptions o;
  o.interval = 60;
  auto plain = SimulateQueues(*tree, 16, jobs, o);
  ASSERT_TRUE(plain.ok());
  o.k_value = 1;
  o.usage.half_life = 3600;
  auto aware = SimulateQueues(*tree, 16, jobs, o);
  ASSERT_TRUE(aware.ok()) << aware.status();
  // The first job of q2 starts much earlier with time-aware fairness.
  EXPECT_LT(aware->jobs[1].start, plain->jobs[1].start);
  EXPECT_GT(aware->preemptions, 0);
}

TEST(QueueTreeSimTest, BadInputIsAnError) {
  auto tree = queues::QueueTree::Build({Q("d", "", 4), Q("a", "d", 4)});
  ASSERT_TRUE(tree.ok());
  auto r = SimulateQueues(*tree, 8, {J(1, 0, 10, 1, tree->Find("d"))}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "queue d has child queues")) << r.status();
  r = SimulateQueues(*tree, 8, {J(1, 0, 10, 9, tree->Find("a"))}, {});
  EXPECT_FALSE(r.ok());
  r = SimulateQueues(*tree, 8, {J(1, 0, -1, 1, tree->Find("a"))}, {});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace gpufleet::sim
