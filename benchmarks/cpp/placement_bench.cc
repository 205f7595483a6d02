// Placement throughput: one pod filtered across all nodes, scored, reserved and committed, on
// clusters of 1,000 / 5,000 / 10,000 nodes with 8 GPUs each, half the GPUs already partly used,
// and a mix of whole-GPU and shared-GPU requests. Each placement is released right after so the
// cluster stays in the same state for every iteration.
//   cmake -S . -B build/bench -G Ninja -DGPUFLEET_BUILD_BENCHMARKS=ON && ninja -C build/bench
//   ./build/bench/placement_bench
#include <benchmark/benchmark.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include <random>
#include <string>
#include <vector>

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/placement/summary_scan.h"

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

// BM_Place without its per-pod timer pause: each iteration places the six pods of the mix in a row
// (each sees the ones before it placed), then, untimed, releases them. The pause and resume of
// BM_Place cost about 0.4 us of CPU time per iteration on a virtual machine (two CPU-clock system
// calls), which this spreads over six placements.
void BM_PlaceBatch(benchmark::State& state, const char* strategy_name) {
  ClusterState s = MakeCluster(static_cast<int>(state.range(0)), 42);
  Placer placer;
  const bool use_cache = state.range(1) != 0;
  auto strategy = MakeStrategy(strategy_name).value();
  const std::vector<Pod> pods = MixedPods();
  size_t placed = 0;
  for (auto _ : state) {
    for (const Pod& pod : pods)
      placed += placer.Place(s, {.pod = pod, .strategy = *strategy, .use_cache = use_cache}).ok();
    state.PauseTiming();
    for (const Pod& pod : pods) (void)s.Release(pod.name);
    state.ResumeTiming();
  }
  if (placed != state.iterations() * pods.size()) state.SkipWithError("a pod did not fit");
  state.counters["placements_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * pods.size()), benchmark::Counter::kIsRate);
}

// The summary scan alone (one pass over every node keeping the first best; no plan, reserve or
// commit), for the same mix of pods, on each build of its loop this CPU runs (range(1): 0
// portable, 1 AVX2, 2 AVX-512).
void BM_Scan(benchmark::State& state) {
  const ClusterState s = MakeCluster(static_cast<int>(state.range(0)), 42);
  const ScanPath path = static_cast<ScanPath>(state.range(1));
  if (!ScanPathAvailable(path)) {
    state.SkipWithError("this CPU lacks that build of the scan");
    return;
  }
  std::vector<Pod> pods = MixedPods();
  SummaryScan scan;
  size_t k = 0;
  for (auto _ : state) {
    const Pod& pod = pods[k++ % pods.size()];
    const NodeAdmission admission(s, pod);
    const SummaryRequest q(pod);
    benchmark::DoNotOptimize(scan.ScoreAll(s, admission, q, /*most=*/true, nullptr, path).best);
  }
  state.counters["scans_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// The memory floor of BM_Scan: the same arrays, byte for byte (SummaryScan::ColumnsRead), read
// with 64-byte loads and nothing computed, for the same mix of pods. Everything fits in L2, so
// this is the time a scan would take at L2 bandwidth.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
[[gnu::target("avx512f")]] uint64_t XorStream512(const uint8_t* p, size_t bytes) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    a = _mm512_xor_si512(a, _mm512_loadu_si512(p + i));
    b = _mm512_xor_si512(b, _mm512_loadu_si512(p + i + 64));
    c = _mm512_xor_si512(c, _mm512_loadu_si512(p + i + 128));
    d = _mm512_xor_si512(d, _mm512_loadu_si512(p + i + 192));
  }
  for (; i + 64 <= bytes; i += 64) a = _mm512_xor_si512(a, _mm512_loadu_si512(p + i));
  uint64_t out =
      _mm512_reduce_or_epi64(_mm512_or_si512(_mm512_or_si512(a, b), _mm512_or_si512(c, d)));
  for (; i < bytes; ++i) out ^= p[i];
  return out;
}
#endif

uint64_t XorStream(const uint8_t* p, size_t bytes) {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  if (ScanPathAvailable(ScanPath::kAvx512)) return XorStream512(p, bytes);
#endif
  uint64_t out = 0;
  for (size_t i = 0; i < bytes; ++i) out ^= p[i];
  return out;
}

void BM_ScanFloor(benchmark::State& state) {
  const ClusterState s = MakeCluster(static_cast<int>(state.range(0)), 42);
  std::vector<std::vector<absl::Span<const uint8_t>>> columns;
  double bytes = 0;
  for (const Pod& pod : MixedPods()) {
    columns.push_back(SummaryScan::ColumnsRead(s.summaries(), SummaryRequest(pod)));
    for (absl::Span<const uint8_t> c : columns.back()) bytes += static_cast<double>(c.size());
  }
  size_t k = 0;
  for (auto _ : state) {
    uint64_t acc = 0;
    for (absl::Span<const uint8_t> c : columns[k++ % columns.size()])
      acc ^= XorStream(c.data(), c.size());
    benchmark::DoNotOptimize(acc);
  }
  state.counters["scans_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["bytes_per_scan"] = bytes / static_cast<double>(columns.size());
}

BENCHMARK_CAPTURE(BM_PlaceBatch, binpack, "binpack")
    ->ArgsProduct({{5000}, {0, 1}})
    ->ArgNames({"nodes", "cache"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Scan)
    ->ArgsProduct({{5000}, {0, 1, 2}})
    ->ArgNames({"nodes", "path"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScanFloor)->Arg(5000)->ArgName("nodes")->Unit(benchmark::kMicrosecond);

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
