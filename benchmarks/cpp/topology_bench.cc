// Gang placement across topology levels: one 2,304-pod gang of 8-GPU pods on 2,500 and 10,000
// nodes of 8 GPUs (16 nodes per rack, 16 racks per block, a host level below), one node in fifty
// running a 1-GPU pod, the gang preferring a rack (it fits none, nor a block, so it spreads over
// the topology and names 2,304 nodes). Also a 200-pod gang required in one block. The baseline in
// the same run is the straightforward way: the domain tree rebuilt from the node labels for the
// call and every node's count found by planning pod after pod on its devices.
//   cmake -S . -B build/bench -G Ninja -DGPUFLEET_BUILD_BENCHMARKS=ON && ninja -C build/bench
//   ./build/bench/topology_bench
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/placement/node_plan.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/topology/gang_placer.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::topology {
namespace {

constexpr int kNodesPerRack = 16, kRacksPerBlock = 16;

Node MakeNode(int i) {
  Node n;
  n.name = absl::StrCat("node-", i);
  n.cpu_milli = 128000;
  n.memory_bytes = int64_t{1} << 40;
  const int rack = i / kNodesPerRack, block = rack / kRacksPerBlock;
  n.labels = {{"topology/block", absl::StrCat("b", block)},
              {"topology/rack", absl::StrCat("r", rack % kRacksPerBlock)},
              {kHostnameLabel, n.name}};
  for (int m = 0; m < 8; ++m) {
    Device d;
    d.minor = m;
    d.model = "H100";
    d.memory_bytes = int64_t{80} << 30;
    n.devices.push_back(d);
  }
  return n;
}

ClusterState MakeCluster(int nodes) {
  ClusterState s;
  for (int i = 0; i < nodes; ++i) (void)s.AddNode(MakeNode(i));
  std::mt19937 rng(11);
  for (int i = 0; i < nodes; ++i) {
    if (rng() % 50 != 0) continue;  // one node in fifty runs a 1-GPU pod
    Allocation a;
    a.pod = absl::StrCat("fill-", i);
    a.node = s.node(i).name;
    a.cpu_milli = 1000;
    a.devices.push_back({kGpu, 0, 100, int64_t{80} << 30});
    (void)s.Reserve(a);
    (void)s.Commit(a.pod);
  }
  return s;
}

std::vector<Level> Levels() {
  return {{"block", "topology/block"}, {"rack", "topology/rack"}, {"host", kHostnameLabel}};
}

GangRequest MakeGang(int pods, bool required_block) {
  GangRequest g;
  g.name = "train";
  GroupRequest w;
  w.name = "workers";
  (void)ParseRequests({{"nvidia.com/gpu", "8"}, {"cpu", "8"}}, &w.pod);
  w.count = pods;
  if (required_block)
    w.constraint.required = "block";
  else
    w.constraint.preferred = "rack";
  g.groups.push_back(w);
  return g;
}

struct Fixture {
  ClusterState state;
  Topology topology;
  std::unique_ptr<PlacementStrategy> binpack;
  explicit Fixture(int nodes) : state(MakeCluster(nodes)) {
    topology = *Topology::FromLabels(state, Levels());
    binpack = *MakeStrategy("binpack");
  }
};

Fixture& Shared(int nodes) {
  static std::map<int, std::unique_ptr<Fixture>> cache;
  auto& f = cache[nodes];
  if (!f) f = std::make_unique<Fixture>(nodes);
  return *f;
}

void BM_Gang(benchmark::State& st) {
  Fixture& f = Shared(static_cast<int>(st.range(0)));
  const GangRequest gang = MakeGang(static_cast<int>(st.range(1)), st.range(2) != 0);
  GangPlacer placer;
  for (auto _ : st) {
    absl::StatusOr<GangPlacement> p = placer.Choose(f.state, f.topology, gang, *f.binpack);
    if (!p.ok() || !p->ok()) st.SkipWithError("gang not placed");
    benchmark::DoNotOptimize(p);
  }
}

// The straightforward way: the tree from the labels for this call, and each node's count by
// planning pod after pod on a copy of the node (NodeCapacity's route for any request).
void BM_GangStraightforward(benchmark::State& st) {
  Fixture& f = Shared(static_cast<int>(st.range(0)));
  const GangRequest gang = MakeGang(static_cast<int>(st.range(1)), st.range(2) != 0);
  GangPlacer placer;
  for (auto _ : st) {
    Topology t = *Topology::FromLabels(f.state, Levels());
    std::vector<int> counts(f.state.num_nodes(), 0);
    for (int n = 0; n < f.state.num_nodes(); ++n) {
      ClusterState one;
      (void)one.AddNode(f.state.node(n));
      if (const Allocation* a = f.state.FindAllocation(absl::StrCat("fill-", n))) {
        Allocation copy = *a;
        copy.state = AllocationState::kReserved;
        (void)one.Reserve(copy);
      }
      Pod p = gang.groups[0].pod;
      for (int k = 0;; ++k) {
        p.name = absl::StrCat("probe-", k);
        Placement plan = PlanOnNode(one, p, 0, *f.binpack);
        if (!plan.ok() || !one.Reserve(plan.allocation).ok()) break;
        ++counts[n];
      }
    }
    absl::StatusOr<GangPlacement> p = placer.Choose(f.state, t, gang, *f.binpack);
    benchmark::DoNotOptimize(counts);
    benchmark::DoNotOptimize(p);
  }
}

BENCHMARK(BM_Gang)
    ->ArgNames({"nodes", "pods", "required_block"})
    ->Args({2500, 2304, 0})
    ->Args({10000, 2304, 0})
    ->Args({2500, 200, 1})
    ->Args({10000, 200, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GangStraightforward)
    ->ArgNames({"nodes", "pods", "required_block"})
    ->Args({2500, 2304, 0})
    ->Args({10000, 2304, 0})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufleet::topology
