// Placement throughput: one pod filtered across all nodes, scored, reserved and committed, on
// clusters of 1,000 / 5,000 / 10,000 nodes with 8 GPUs each, half the GPUs already partly used,
// and a mix of whole-GPU and shared-GPU requests. Each placement is released right after so the
// cluster stays in the same state for every iteration.
//   cmake -S . -B build/bench -G Ninja -DGPUFLEET_BUILD_BENCHMARKS=ON && ninja -C build/bench
//   ./build/bench/placement_bench
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {
namespace {

Node MakeNode(int i) {
  Node n;
  n.name = "node-" + std::to_string(i);
  n.cpu_milli = 128000;
  n.memory_bytes = int64_t{1} << 40;
  for (int m = 0; m < 8; ++m) {
    Device d;
    d.minor = m;
    d.model = "A100";
    d.memory_bytes = int64_t{80} << 30;
    d.topology.pcie_switch = "pci" + std::to_string(m / 2);
    d.topology.numa_node = m / 4;
    n.devices.push_back(d);
  }
  return n;
}

Pod MakePod(const std::string& name, const std::map<std::string, std::string>& requests) {
  Pod p;
  p.name = name;
  (void)ParseRequests(requests, &p);
  return p;
}

// Half of all GPUs carry a shared pod using 25-75% of core and memory.
ClusterState MakeCluster(int nodes, uint32_t seed) {
  ClusterState s;
  for (int i = 0; i < nodes; ++i) (void)s.AddNode(MakeNode(i));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pct(25, 75);
  int k = 0;
  for (int i = 0; i < nodes; ++i) {
    for (int m = 0; m < 8; m += 2) {
      int share = pct(rng);
      Allocation a;
      a.pod = "fill-" + std::to_string(k++);
      a.node = s.node(i).name;
      a.devices.push_back({kGpu, m + (i % 2), share, (int64_t{80} << 30) / 100 * share});
      (void)s.Reserve(a);
      (void)s.Commit(a.pod);
    }
  }
  return s;
}

std::vector<Pod> MixedPods() {
  return {
      MakePod("whole-1", {{"nvidia.com/gpu", "1"}}),
      MakePod("shared-30", {{"koordinator.sh/gpu-core", "30"}, {"koordinator.sh/gpu-memory-ratio", "30"}}),
      MakePod("whole-4", {{"nvidia.com/gpu", "4"}}),
      MakePod("mem-8g", {{"aliyun.com/gpu-mem", "8192"}}),
      MakePod("whole-2", {{"nvidia.com/gpu", "2"}}),
      MakePod("shared-50", {{"koordinator.sh/gpu", "50"}}),
  };
}

// range(1) = 1 reuses unchanged nodes' scores per pod shape (the default, the score table);
// 0 filters and scores every node for every pod.
void BM_Place(benchmark::State& state, const char* strategy_name) {
  ClusterState s = MakeCluster(static_cast<int>(state.range(0)), 42);
  Placer placer;
  const bool use_cache = state.range(1) != 0;
  auto strategy = MakeStrategy(strategy_name).value();
  std::vector<Pod> pods = MixedPods();
  size_t k = 0, placed = 0;
  for (auto _ : state) {
    const Pod& pod = pods[k++ % pods.size()];
    const Placement r =
        placer.Place(s, {.pod = pod, .strategy = *strategy, .use_cache = use_cache});
    if (r.ok()) {
      ++placed;
      state.PauseTiming();
      (void)s.Release(pod.name);
      state.ResumeTiming();
    }
  }
  if (placed != state.iterations()) state.SkipWithError("a pod did not fit");
  state.counters["placements_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Place, binpack, "binpack")
    ->ArgsProduct({{1000, 5000, 10000}, {0, 1}})
    ->ArgNames({"nodes", "cache"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Place, spread, "spread")
    ->ArgsProduct({{1000, 5000, 10000}, {0, 1}})
    ->ArgNames({"nodes", "cache"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Place, topology, "topology")
    ->ArgsProduct({{5000}, {0, 1}})
    ->ArgNames({"nodes", "cache"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufleet
