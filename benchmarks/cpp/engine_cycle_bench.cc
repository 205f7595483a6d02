// One full scheduling cycle (enqueue, allocate, backfill with the default plugins) on a large
// cluster: N nodes x 8 GPUs, 5 tasks per gang job across 10 queues, a mix of 1-GPU, 2-GPU and
// half-GPU tasks that asks for more GPUs than exist. Baseline in the same run: placing the same
// tasks one by one with Placer::Place (binpack, no gangs, no queues).
//   cmake -S . -B build/bench -G Ninja -DGPUFLEET_BUILD_BENCHMARKS=ON -DCMAKE_BUILD_TYPE=Release
//   ninja -C build/bench engine_cycle_bench && taskset -c 0 build/bench/engine_cycle_bench
#include <benchmark/benchmark.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/placement/placer.h"

namespace gpufleet::engine {
namespace {

Node MakeNode(int i) {
  Node n;
  n.name = absl::StrCat("node-", i);
  n.cpu_milli = 128000;
  n.memory_bytes = int64_t{1024} << 30;
  n.labels["zone"] = absl::StrCat("z", i % 4);
  for (int d = 0; d < 8; ++d) {
    Device dev;
    dev.minor = d;
    dev.model = "A100";
    dev.memory_bytes = int64_t{80} << 30;
    n.devices.push_back(dev);
  }
  return n;
}

Pod MakeTask(const std::string& name, int kind) {
  Pod p;
  p.name = name;
  p.cpu_milli = 4000;
  p.memory_bytes = int64_t{32} << 30;
  DeviceRequest r;
  r.type = "gpu";
  if (kind < 6) {  // 60%: one whole GPU
    r.count = 1, r.core = 100, r.memory_ratio = 100;
  } else if (kind < 8) {  // 20%: two whole GPUs
    r.count = 2, r.core = 100, r.memory_ratio = 100;
  } else {  // 20%: half a GPU
    r.count = 1, r.core = 50, r.memory_ratio = 50;
  }
  p.devices.push_back(r);
  return p;
}

std::vector<Job> MakeJobs(int tasks) {
  std::mt19937 rng(42);
  std::vector<Job> jobs;
  for (int j = 0; j < tasks / 5; ++j) {
    Job job;
    job.name = absl::StrCat("job-", j);
    job.queue = absl::StrCat("q", j % 10);
    job.priority = static_cast<int>(rng() % 3);
    job.min_available = 5;
    job.creation = j;
    const int kind = static_cast<int>(rng() % 10);
    for (int t = 0; t < 5; ++t) job.tasks.push_back(MakeTask(absl::StrCat(job.name, "-", t), kind));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Turns node equivalence classes off, to measure what they save (same decisions, full scans).
class NoNodeClasses : public Plugin {
 public:
  void OnSessionOpen(Session& s) override { s.DisableNodeClasses(); }
};
GPUFLEET_REGISTER(Plugin, {.name = "bench-no-node-classes", .description = "benchmark only"},
                  [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
                    return std::unique_ptr<Plugin>(new NoNodeClasses());
                  });

std::unique_ptr<Scheduler> Build(int nodes, int tasks, bool classes = true) {
  auto s = std::make_unique<Scheduler>();
  if (!classes) {
    Json conf = DefaultConfigJson();
    conf["tiers"][1]["plugins"].push_back({{"name", "bench-no-node-classes"}});
    (void)s->Configure(conf);
  }
  for (int i = 0; i < nodes; ++i) (void)s->cluster().AddNode(MakeNode(i));
  for (int q = 0; q < 10; ++q) (void)s->AddQueue(Queue{absl::StrCat("q", q), 1.0 + q % 3});
  for (const Job& j : MakeJobs(tasks)) (void)s->SubmitJob(j);
  return s;
}

void BM_EngineCycle(benchmark::State& state) {
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

void BM_PlaceBaseline(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)), tasks = static_cast<int>(state.range(1));
  auto strategy = MakeStrategy("binpack");
  std::vector<Job> jobs = MakeJobs(tasks);
  int64_t placed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState cs;
    Placer placer;
    for (int i = 0; i < nodes; ++i) (void)cs.AddNode(MakeNode(i));
    placed = 0;
    state.ResumeTiming();
    for (const Job& j : jobs)
      for (const Pod& p : j.tasks)
        placed += placer.Place(cs, {.pod = p, .strategy = **strategy}).ok();
  }
  state.counters["binds"] = static_cast<double>(placed);
}

// Args: nodes, tasks, node classes on (1) / off (0).
BENCHMARK(BM_EngineCycle)->Args({1000, 10000, 1})->Args({5000, 50000, 1})->Args({1000, 10000, 0})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_PlaceBaseline)->Args({1000, 10000})->Args({5000, 50000})->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace gpufleet::engine
