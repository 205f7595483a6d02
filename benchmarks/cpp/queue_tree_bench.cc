// Queue trees. (1) Fair shares of 1,000 leaf queues in a 4-level tree (2 x 5 x 10 x 10, 1,112
// queues) over 10,000 GPUs, per policy: target under 1 ms. (2) One engine cycle (enqueue,
// allocate, backfill) at N nodes x 8 GPUs with T tasks in 5-task gangs spread over 1,000 leaf
// queues: flat queues with the proportion plugin against the same leaves in the 4-level tree
// with the queuetree plugin (kai), in the same run: target tree / flat <= 1.2.
//   cmake -S . -B build/bench -G Ninja -DGPUFLEET_BUILD_BENCHMARKS=ON -DCMAKE_BUILD_TYPE=Release
//   ninja -C build/bench queue_tree_bench && taskset -c 0 build/bench/queue_tree_bench
#include <benchmark/benchmark.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "gpufleet/engine/config.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/queues/division.h"
#include "gpufleet/queues/queue_tree.h"

namespace gpufleet {
namespace {

constexpr int kFanout[] = {2, 5, 10, 10};  // 1,000 leaves on the fourth level

// Names of the tree's queues with their parents, parents first; leaves last.
std::vector<std::pair<std::string, std::string>> TreeShape(std::vector<std::string>* leaves) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> level = {""};
  for (int d = 0; d < 4; ++d) {
    std::vector<std::string> next;
    for (const std::string& p : level)
      for (int k = 0; k < kFanout[d]; ++k) {
        const std::string name = absl::StrCat(p.empty() ? "q" : p, ".", k);
        out.emplace_back(name, p);
        next.push_back(name);
      }
    level = next;
  }
  *leaves = level;
  return out;
}

void BM_FairShares(benchmark::State& state) {
  const auto policy = static_cast<queues::DivisionPolicy>(state.range(0));
  std::vector<std::string> leaves;
  std::vector<queues::QueueSpec> specs;
  for (const auto& [name, parent] : TreeShape(&leaves)) {
    queues::QueueSpec s;
    s.name = name;
    s.parent = parent;
    s.weight = 1 + static_cast<int>(name.size()) % 3;
    specs.push_back(s);
  }
  // Leaves owe 8 GPUs each (8,000 of 10,000); parents the sum of their children.
  std::map<std::string, double> owed;
  for (const std::string& l : leaves)
    for (std::string q = l; !q.empty(); q = q.substr(0, q.rfind('.') == 1 ? 0 : q.rfind('.')))
      owed[q] += 8;
  for (queues::QueueSpec& s : specs) s.quota.resources["gpu"].quota = owed[s.name];
  const queues::QueueTree tree = *queues::QueueTree::Build(specs);
  const int R = tree.num_resources();
  std::mt19937 rng(1);
  std::vector<double> request(tree.size() * R, 0.0);
  for (const std::string& l : leaves) {
    std::vector<double> a(R, 0.0);
    a[queues::kGpu] = rng() % 25;
    a[queues::kCpu] = a[queues::kGpu] * 8000;
    a[queues::kMemory] = a[queues::kGpu] * 64e9;
    queues::AddAlongPath(tree, tree.Find(l), a, 1, &request);
  }
  std::vector<double> capacity(R, 0.0);
  capacity[queues::kGpu] = 10000;
  capacity[queues::kCpu] = 10000 * 16000.0;
  capacity[queues::kMemory] = 10000 * 128e9;
  queues::ShareDivider divider;
  std::vector<double> fs;
  for (auto _ : state) {
    divider.Divide(policy, {&tree, capacity, request, {}, 0}, &fs);
    benchmark::DoNotOptimize(fs.data());
  }
  state.counters["queues"] = tree.size();
}
BENCHMARK(BM_FairShares)
    ->Arg(static_cast<int>(queues::DivisionPolicy::kKai))
    ->Arg(static_cast<int>(queues::DivisionPolicy::kDrs))
    ->Arg(static_cast<int>(queues::DivisionPolicy::kCapacity))
    ->Unit(benchmark::kMicrosecond);

Node MakeNode(int i) {
  Node n;
  n.name = absl::StrCat("node-", i);
  n.cpu_milli = 128000;
  n.memory_bytes = int64_t{1024} << 30;
  for (int d = 0; d < 8; ++d) {
    Device dev;
    dev.minor = d;
    dev.model = "A100";
    dev.memory_bytes = int64_t{80} << 30;
    n.devices.push_back(dev);
  }
  return n;
}

// The engine cycle bench's job mix (engine_cycle_bench.cc) over `leaves`.
std::vector<engine::Job> MakeJobs(int tasks, const std::vector<std::string>& leaves) {
  std::mt19937 rng(42);
  std::vector<engine::Job> jobs;
  for (int j = 0; j < tasks / 5; ++j) {
    engine::Job job;
    job.name = absl::StrCat("job-", j);
    job.queue = leaves[j % leaves.size()];
    job.priority = static_cast<int>(rng() % 3);
    job.min_available = 5;
    job.creation = j;
    const int kind = static_cast<int>(rng() % 10);
    for (int t = 0; t < 5; ++t) {
      Pod p;
      p.name = absl::StrCat(job.name, "-", t);
      p.cpu_milli = 4000;
      p.memory_bytes = int64_t{32} << 30;
      DeviceRequest r;
      r.type = "gpu";
      if (kind < 6) r.count = 1, r.core = 100, r.memory_ratio = 100;
      else if (kind < 8) r.count = 2, r.core = 100, r.memory_ratio = 100;
      else r.count = 1, r.core = 50, r.memory_ratio = 50;
      p.devices.push_back(r);
      job.tasks.push_back(p);
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::unique_ptr<engine::Scheduler> Build(int nodes, int tasks, bool tree) {
  auto s = std::make_unique<engine::Scheduler>();
  std::vector<std::string> leaves;
  const auto shape = TreeShape(&leaves);
  if (tree) {
    Json conf = engine::DefaultConfigJson();
    for (Json& p : conf["tiers"][1]["plugins"])
      if (p.is_string() ? p == "proportion" : p["name"] == "proportion") p = "queuetree";
    if (!s->Configure(conf).ok()) std::abort();
    const double per_leaf = 8.0 * nodes / leaves.size();
    std::map<std::string, double> owed;
    for (const auto& [name, parent] : shape)
      if (std::find(leaves.begin(), leaves.end(), name) != leaves.end())
        for (std::string q = name; !q.empty();) {
          owed[q] += per_leaf;
          auto it = std::find_if(shape.begin(), shape.end(),
                                 [&](const auto& e) { return e.first == q; });
          q = it->second;
        }
    for (const auto& [name, parent] : shape) {
      engine::Queue q;
      q.name = name;
      q.parent = parent;
      q.quota.resources["gpu"].quota = owed[name];
      if (!s->AddQueue(q).ok()) std::abort();
    }
  } else {
    for (const std::string& l : leaves) (void)s->AddQueue(engine::Queue{l, 1.0});
  }
  for (int i = 0; i < nodes; ++i) (void)s->cluster().AddNode(MakeNode(i));
  for (const engine::Job& j : MakeJobs(tasks, leaves)) (void)s->SubmitJob(j);
  return s;
}

void BM_EngineCycleQueues(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)), tasks = static_cast<int>(state.range(1));
  int64_t binds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = Build(nodes, tasks, state.range(2) != 0);
    state.ResumeTiming();
    auto r = s->RunCycle();
    benchmark::DoNotOptimize(r);
    binds = r.ok() ? static_cast<int64_t>(r->binds.size()) : -1;
  }
  state.counters["binds"] = static_cast<double>(binds);
}
// Args: nodes, tasks, tree (1) or flat (0), alternating so both see the same machine.
BENCHMARK(BM_EngineCycleQueues)
    ->Args({1000, 10000, 0})->Args({1000, 10000, 1})
    ->Args({5000, 50000, 0})->Args({5000, 50000, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace gpufleet
