// The anchors' bugs turned into properties, over seeded random streams of jobs on random queue
// trees (flat and up to three levels, kai, drs and capacity policies, random quotas, limits,
// weights and priorities), with enqueue, allocate, treereclaim and preempt every cycle:
//   no cycle      no job is ever preempted by one it preempted before, directly or in a chain
//                 (Kueue 3779);
//   floors        a reclaim never takes a queue that held at least its deserved amount below it,
//                 nor lowers one already below it;
//   limits        no queue (leaf or inner) ever holds more than its limit;
//   liveness      once arrivals and completions stop, no queue stays below its deserved amount
//                 with a pending job that fits in what it is owed (Kueue 6577, Volcano 4808).
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "gtest/gtest.h"

namespace gpufleet::engine {
namespace {

struct World {
  std::string policy;
  std::map<std::string, std::string> parent;   // queue -> parent ("" top)
  std::map<std::string, int> deserved;         // queue -> GPUs owed (sum of its leaves' quotas)
  std::map<std::string, int> limit;            // queue -> GPU limit (absent: none)
  std::vector<std::string> leaves;
  int gpus = 0;
};

World MakeWorld(std::mt19937& rng, const std::string& policy, Scheduler* s) {
  World w;
  w.policy = policy;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Json nodes = Json::array();
  const int n = pick(2, 4), per = pick(0, 1) ? 4 : 8;
  for (int i = 0; i < n; ++i)
    nodes.push_back({{"name", absl::StrCat("n", i)}, {"cpu", "64"}, {"memory", "256Gi"},
                     {"gpus", {{"count", per}, {"model", "A100"}, {"memory", "80Gi"}}}});
  w.gpus = n * per;
  // The tree: a top level (one cohort for drs, whose queues may only reclaim within it), then
  // up to two more levels.
  const int depth = pick(1, 3);
  std::vector<std::string> level = {};
  if (policy == "drs") {
    w.parent["org"] = "";
    level = {"org"};
  }
  std::vector<std::string> frontier = level;
  for (int d = 0; d < depth; ++d) {
    std::vector<std::string> next;
    const std::vector<std::string> parents = frontier.empty() ? std::vector<std::string>{""} : frontier;
    for (const std::string& p : parents) {
      const int kids = pick(2, 3);
      for (int k = 0; k < kids; ++k) {
        const std::string q = absl::StrCat(p.empty() ? "q" : p, "-", k);
        w.parent[q] = p;
        next.push_back(q);
      }
    }
    frontier = next;
  }
  w.leaves = frontier;
  // Leaf quotas share at most the cluster; a queue is owed the sum of its leaves'.
  int budget = pick(w.gpus / 2, w.gpus);
  for (const std::string& l : w.leaves) {
    const int q = std::min(budget, pick(0, std::max(1, 2 * w.gpus / static_cast<int>(w.leaves.size()))));
    budget -= q;
    for (std::string a = l; !a.empty(); a = w.parent[a]) w.deserved[a] += q;
  }
  Json queues = Json::array();
  for (const auto& [q, p] : w.parent) {
    const bool leaf = std::find(w.leaves.begin(), w.leaves.end(), q) != w.leaves.end();
    // kai and capacity: a queue's quota is what it is owed; Kueue cohorts add nothing of their
    // own (their subtree quota is their children's).
    const int own = policy == "drs" && !leaf ? 0 : w.deserved[q];
    Json j = {{"name", q}, {"weight", pick(1, 3)}, {"quota", {{"gpu", own}}}};
    if (!p.empty()) j["parent"] = p;
    if (pick(0, 3) == 0 && !(policy == "drs" && q == "org")) {
      w.limit[q] = w.deserved[q] + pick(0, 4);
      j["limit"] = {{"gpu", w.limit[q]}};
    }
    queues.push_back(j);
  }
  absl::Status st = LoadScenario({{"nodes", nodes}, {"queues", queues}}, s);
  EXPECT_TRUE(st.ok()) << st;
  return w;
}

Json Config(const std::string& policy) {
  return {{"actions", "enqueue, allocate, treereclaim, preempt"},
          {"tiers",
           {{{"plugins", {"priority", "gang"}}},
            {{"plugins",
              {"predicates", {{"name", "queuetree"}, {"arguments", {{"policy", policy}}}},
               "nodeorder"}}}}}};
}

// The job a preemption reason names ("... of job J)" or "... of job J (priority p)").
std::string PreemptorOf(const std::string& reason) {
  const size_t at = reason.find("of job ");
  if (at == std::string::npos) return "";
  const size_t from = at + 7;
  size_t to = reason.find_first_of(" )", from);
  return reason.substr(from, to - from);
}

bool Reaches(const std::map<std::string, std::set<std::string>>& edges, const std::string& from,
             const std::string& to) {
  std::vector<std::string> stack = {from};
  std::set<std::string> seen = {from};
  while (!stack.empty()) {
    const std::string at = stack.back();
    stack.pop_back();
    if (at == to) return true;
    auto it = edges.find(at);
    if (it == edges.end()) continue;
    for (const std::string& n : it->second)
      if (seen.insert(n).second) stack.push_back(n);
  }
  return false;
}

std::map<std::string, int> Held(const Scheduler& s, const World& w) {
  std::map<std::string, int> held;
  for (const JobState& j : s.Jobs())
    for (std::string q = j.queue; !q.empty(); q = w.parent.count(q) ? w.parent.at(q) : "")
      held[q] += j.running;
  return held;
}

void RunStream(uint32_t seed, const std::string& policy, int* preemptions) {
  SCOPED_TRACE(absl::StrCat("seed ", seed, " policy ", policy));
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Scheduler s;
  ASSERT_TRUE(s.Configure(Config(policy)).ok());
  const World w = MakeWorld(rng, policy, &s);
  std::map<std::string, int> ends;  // running job -> cycle it finishes
  std::map<std::string, std::set<std::string>> edges;  // preemptor -> victims, both alive
  int next_job = 0, quiet = 0;
  const int stream = 40;
  for (int cycle = 0; cycle < stream + 30; ++cycle) {
    const bool streaming = cycle < stream;
    if (streaming) {
      for (int a = pick(0, 3); a > 0; --a) {
        const int tasks = pick(1, 3);
        Json j = {{"name", absl::StrCat("j", next_job++)},
                  {"queue", w.leaves[pick(0, static_cast<int>(w.leaves.size()) - 1)]},
                  {"priority", pick(0, 2)}, {"replicas", tasks},
                  {"requests", {{"cpu", "1"}, {"nvidia.com/gpu", 1}}}};
        auto job = JobFromJson(j);
        ASSERT_TRUE(job.ok());
        ASSERT_TRUE(s.SubmitJob(*job).ok());
      }
      for (const JobState& j : s.Jobs())
        if (j.running > 0 && ends.count(j.name) && ends[j.name] <= cycle) {
          ASSERT_TRUE(s.DeleteJob(j.name).ok());
          ends.erase(j.name);
          edges.erase(j.name);
          for (auto& [p, vs] : edges) vs.erase(j.name);
        }
    }
    const std::map<std::string, int> before = Held(s, w);
    auto r = s.RunCycle();
    ASSERT_TRUE(r.ok()) << r.status();
    const std::map<std::string, int> after = Held(s, w);
    std::map<std::string, int> reclaimed_from;
    for (const EvictDecision& e : r->evictions) {
      const std::string p = PreemptorOf(e.reason);
      ASSERT_FALSE(p.empty()) << e.reason;
      ++*preemptions;
      ASSERT_FALSE(Reaches(edges, e.job, p))
          << p << " preempts " << e.job << ", which preempted it (directly or in a chain)";
      edges[p].insert(e.job);
      if (e.reason.find("reclaimed") == 0) {
        std::string q;
        for (const JobState& j : s.Jobs())
          if (j.name == e.job) q = j.queue;
        for (; !q.empty(); q = w.parent.at(q)) reclaimed_from[q] = 1;
      }
    }
    for (const auto& [q, unused] : reclaimed_from) {
      const int d = w.deserved.at(q), b = before.count(q) ? before.at(q) : 0,
                a = after.count(q) ? after.at(q) : 0;
      EXPECT_GE(a, std::min(d, b)) << "cycle " << cycle << ": reclaim took queue " << q
                                   << " from " << b << " to " << a << " (deserved " << d << ")";
    }
    for (const auto& [q, l] : w.limit) {
      const int a = after.count(q) ? after.at(q) : 0;
      EXPECT_LE(a, l) << "cycle " << cycle << ": queue " << q << " above its limit";
    }
    for (const JobState& j : s.Jobs())
      if (j.running > 0 && !ends.count(j.name)) ends[j.name] = cycle + pick(3, 15);
      else if (j.running == 0) ends.erase(j.name);
    if (!streaming) {
      quiet = r->binds.empty() && r->evictions.empty() ? quiet + 1 : 0;
      if (quiet >= 3) break;
    }
  }
  // Liveness: no queue waits below what it is owed with a job that fits in the difference.
  const std::map<std::string, int> held = Held(s, w);
  for (const JobState& j : s.Jobs()) {
    if (j.running > 0) continue;
    const int h = held.count(j.queue) ? held.at(j.queue) : 0;
    bool fits = true;
    for (std::string q = j.queue; !q.empty(); q = w.parent.at(q)) {
      const int hq = held.count(q) ? held.at(q) : 0;
      fits = fits && hq + j.tasks <= w.deserved.at(q) &&
             (!w.limit.count(q) || hq + j.tasks <= w.limit.at(q));
    }
    EXPECT_FALSE(fits) << "job " << j.name << " (" << j.tasks << " GPUs) waits in queue "
                       << j.queue << ", which holds " << h << " of the "
                       << w.deserved.at(j.queue) << " it is owed";
  }
}

TEST(QueueTreePropertyTest, RandomStreamsKeepEveryInvariant) {
  int preemptions = 0;
  for (uint32_t seed = 1; seed <= 45; ++seed)
    RunStream(seed, std::vector<std::string>{"kai", "drs", "capacity"}[seed % 3], &preemptions);
  // The streams do exercise reclaim and preemption.
  EXPECT_GT(preemptions, 100);
}

}  // namespace
}  // namespace gpufleet::engine
