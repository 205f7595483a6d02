#include "gpufleet/placement/placer.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_format.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/accounting/node_summaries.h"
#include "gpufleet/placement/node_score.h"
#include "gpufleet/placement/rdma_vf_plan.h"

// The scan's loops compute every operation on every node and select afterwards, so assuming no
// floating-point traps lets the compiler vectorise them without changing any value. Pushed and
// popped so that a unity build's other files keep their options.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

namespace gpufleet {
namespace {

constexpr double kNoNode = NodeScoreCache::kInfeasible;

// Joint allocation: a NIC (or any non-GPU device) under the same PCIe switch as the pod's GPUs
// keeps GPUDirect RDMA traffic off the CPU's root complex; failing that, one on the same NUMA
// node. A preference, not a constraint, so Filter (which never looks at it) and Plan agree on
// which nodes fit. Fills `chosen` only when a near set serves the whole request.
void PreferNearGpus(const NodeView& v, const std::vector<int>& gpus, const DeviceRequest& r,
                    const PlacementStrategy& strategy,
                    const std::vector<std::vector<int>>& domains, std::vector<int>* chosen) {
  auto near = [&](int d, bool by_switch) {
    const DeviceTopology& t = v.device(d).topology;
    for (int g : gpus) {
      const DeviceTopology& gt = v.device(g).topology;
      if (by_switch ? !t.pcie_switch.empty() && t.pcie_switch == gt.pcie_switch
                    : t.numa_node >= 0 && t.numa_node == gt.numa_node)
        return true;
    }
    return false;
  };
  for (bool by_switch : {true, false}) {
    std::vector<std::vector<int>> close(domains.size());
    for (size_t k = 0; k < domains.size(); ++k)
      for (int d : domains[k])
        if (near(d, by_switch)) close[k].push_back(d);
    chosen->clear();
    if (strategy.ChooseDevices(v, r, close, chosen) && static_cast<int>(chosen->size()) == r.count)
      return;
  }
  chosen->clear();
}



// Exact fit of an unconstrained GPU request (no models, no scope, no NVLink) from the per-device
// arrays.
bool FastGpuFit(const ClusterState& state, int node, const DeviceRequest& r) {
  const NodeUsage& u = state.usage(node);
  if (u.gpu_sharing == GpuSharing::kWholeOnly && !r.whole()) return false;
  if (u.gpu_sharing == GpuSharing::kSharedOnly && r.whole()) return false;
  if (r.whole()) return u.gpu_whole_free >= r.count;
  // Enough untouched GPUs, each big enough: the common case on a cluster that is not full.
  if (u.gpu_whole_free >= r.count && r.core <= u.gpu_min_core_capacity &&
      (r.memory_ratio > 0 ? r.memory_ratio <= 100 : r.memory_bytes <= u.gpu_min_memory_capacity))
    return true;
  const int begin = state.first_device(node);
  const int end = begin + u.num_devices;
  const int64_t* used_core = state.used_core().data();
  const int64_t* used_memory = state.used_memory().data();
  const uint8_t* healthy = state.healthy_gpu().data();
  const int64_t* capacity_core = state.capacity_core().data();
  const int64_t* capacity_memory = state.capacity_memory().data();
  int fitting = 0;
  for (int d = begin; d < end; ++d) {
    if (!healthy[d]) continue;
    const int64_t bytes = r.memory_ratio > 0 ? (r.memory_ratio * capacity_memory[d] + 99) / 100
                                             : r.memory_bytes;
    if (capacity_core[d] - used_core[d] >= r.core &&
        capacity_memory[d] - used_memory[d] >= bytes && ++fitting >= r.count)
      return true;
  }
  return false;
}



// What a pod asks of a node, worked out once per pod instead of once per node.
struct PodShapeFacts {
  const DeviceRequest* gpu = nullptr;
  bool simple = false;             // GPUs only, any model, no scope: FastGpuFit is exact
  bool check_constraints = false;  // the pod has a node selector
  bool needs_plan = false;

  PodShapeFacts(const Pod& pod, const PlacementStrategy& strategy) {
    gpu = pod.Find(kGpu);
    const bool gpu_only = pod.devices.size() == (gpu ? 1u : 0u);
    simple = gpu_only && pod.gpu_models.empty() && pod.scope == TopologyScope::kNone;
    check_constraints = !pod.node_selector.empty();
    needs_plan = strategy.ScoreNeedsPlan();
  }
};

// Node totals and label/taint constraints: a cheap necessary condition.
bool NodeMayFit(const ClusterState& state, const Pod& pod, int i, const PodShapeFacts& shape) {
  const NodeUsage& u = state.usage(i);
  if (!QuickMayFit(pod, shape.gpu, u)) return false;
  return !(shape.check_constraints || u.has_taints) || FitsNodeConstraints(pod, state.node(i)).ok();
}

// Resources, constraints and devices: exactly Filter plus the constraints, without the score.
bool NodeFits(const ClusterState& state, const Pod& pod, int i, const PodShapeFacts& shape) {
  if (!NodeMayFit(state, pod, i, shape)) return false;
  const NodeUsage& u = state.usage(i);
  const bool fast =
      shape.simple && (shape.gpu == nullptr || shape.gpu->count == 1 || !u.has_nvlink);
  if (fast) return shape.gpu == nullptr || FastGpuFit(state, i, *shape.gpu);
  return state.Filter(pod, i).ok();
}

// The node's score for `pod`, or kNoNode. Fills `plan` when the strategy scores from a plan.
double ExactScore(const ClusterState& state, const Pod& pod, int i,
                  const PlacementStrategy& strategy, const PodShapeFacts& shape, Allocation* plan) {
  if (shape.needs_plan) {
    // PlanOnNode filters the devices itself.
    if (!NodeMayFit(state, pod, i, shape) || !PlanOnNode(state, pod, i, strategy, plan).ok())
      return kNoNode;
    return strategy.ScoreNode(state.View(i), pod, plan->devices);
  }
  if (!NodeFits(state, pod, i, shape)) return kNoNode;
  return strategy.ScoreNode(state.View(i), pod, {});
}

// The first node with the best exact score among `total` nodes (`node_at(k)`, skipping those
// `skip` rules out), or -1. Fills `plan` from the winner when the strategy scores from a plan:
// a strategy with random draws must keep the plan it was scored with.
template <typename NodeAt, typename Skip>
int BestByExactScore(const ClusterState& state, const Pod& pod, const PlacementStrategy& strategy,
                     const PodShapeFacts& shape, int total, NodeAt node_at, Skip skip,
                     Allocation* plan) {
  int best = -1;
  double best_score = -1.0;
  Allocation scratch;
  for (int k = 0; k < total; ++k) {
    const int i = node_at(k);
    if (skip(i)) continue;
    const double score = ExactScore(state, pod, i, strategy, shape, &scratch);
    if (score > best_score) {
      best_score = score;
      best = i;
      if (shape.needs_plan) *plan = scratch;
    }
  }
  return best;
}

// A pod's needs and score terms as doubles, for the scan over NodeSummaries. `exact` is false
// when some value is too large for the doubles to be exact; the scan is then not used.
struct SummaryRequest {
  bool exact = true;
  bool gpu = false, whole = false, by_percent = false;
  double cpu = 0, memory = 0, count = 0, core = 0, bytes = 0;
  double core_extra = 0, memory_extra = 0;  // GPU core and (by bytes) memory the pod adds
  int64_t percent = 0, count_int = 0;

  explicit SummaryRequest(const Pod& pod) {
    constexpr int64_t kLimit = NodeSummaries::kExactLimit;
    auto in_range = [](int64_t v, int64_t limit) { return v > -limit && v < limit; };
    exact = in_range(pod.cpu_milli, kLimit) && in_range(pod.memory_bytes, kLimit);
    cpu = static_cast<double>(pod.cpu_milli);
    memory = static_cast<double>(pod.memory_bytes);
    const DeviceRequest* g = pod.Find(kGpu);
    if (g == nullptr) return;
    const PodDemand demand(pod);
    gpu = true;
    whole = g->whole();
    count_int = g->count;
    // Per-device figures below 2^40 times at most 1,024 devices keep every product exact.
    constexpr int64_t kDevice = int64_t{1} << 40;
    exact = exact && g->count >= 1 && g->count <= 1024 && in_range(demand.core, kDevice) &&
            in_range(demand.memory_bytes, kDevice) && in_range(g->memory_ratio, kDevice);
    count = g->count;
    core = static_cast<double>(g->core);
    bytes = g->memory_ratio != 0 ? -1.0 : static_cast<double>(g->memory_bytes);
    core_extra = static_cast<double>(demand.core * demand.count);
    by_percent = demand.memory_percent > 0;
    percent = demand.memory_percent;
    memory_extra = static_cast<double>(demand.memory_bytes * demand.count);
  }

  // What the pod adds to a node's GPU memory when asked in percent of the node's average card.
  int64_t PercentBytes(int64_t average) const { return percent * average / 100 * count_int; }
};

// min(1, (used + extra) / capacity), 0 without capacity: AllocatedFractionAfter's term, on
// exact doubles.
inline double Fraction(double used, double extra, double capacity) {
  const double x = (used + extra) / capacity;
  const double clamped = x < 1.0 ? x : 1.0;
  return capacity > 0.0 ? clamped : 0.0;
}

// Dense column pointers of NodeSummaries, so the scan loop reads plain arrays.
struct SummaryColumns {
  const double* __restrict free_cpu;
  const double* __restrict free_memory;
  const double* __restrict free_pods;
  const double* __restrict whole_free;
  const double* __restrict shared_gpus;
  const double* __restrict max_free_core;
  const double* __restrict max_free_memory;
  const double* __restrict cpu_used;
  const double* __restrict cpu_capacity;
  const double* __restrict memory_used;
  const double* __restrict memory_capacity;
  const double* __restrict gpu_core_used;
  const double* __restrict gpu_core_capacity;
  const double* __restrict gpu_memory_used;
  const double* __restrict gpu_memory_capacity;

  explicit SummaryColumns(const NodeSummaries& m)
      : free_cpu(m.free_cpu.data()),
        free_memory(m.free_memory.data()),
        free_pods(m.free_pods.data()),
        whole_free(m.whole_free.data()),
        shared_gpus(m.shared_gpus.data()),
        max_free_core(m.max_free_core.data()),
        max_free_memory(m.max_free_memory.data()),
        cpu_used(m.cpu_used.data()),
        cpu_capacity(m.cpu_capacity.data()),
        memory_used(m.memory_used.data()),
        memory_capacity(m.memory_capacity.data()),
        gpu_core_used(m.gpu_core_used.data()),
        gpu_core_capacity(m.gpu_core_capacity.data()),
        gpu_memory_used(m.gpu_memory_used.data()),
        gpu_memory_capacity(m.gpu_memory_capacity.data()) {}
};

// Node i's score from the summaries (the same doubles as the strategy's ScoreNode), or kNoNode
// when the summaries already rule the node out. `memory_extra`: the pod's GPU memory on node i.
// Everything is computed and then selected, so the loop over nodes has no branches.
template <bool kGpuPod, bool kWhole, bool kMost>
inline double SummaryScore(const SummaryColumns& m, int i, const SummaryRequest& q,
                           double memory_extra, bool allowed) {
  bool ok = (q.cpu <= m.free_cpu[i]) & (q.memory <= m.free_memory[i]) & (1.0 <= m.free_pods[i]) &
            allowed;
  double fraction;
  if constexpr (kGpuPod) {
    if constexpr (kWhole) {
      ok &= q.count <= m.whole_free[i];
    } else {
      ok &= (q.count <= m.shared_gpus[i]) & (q.core <= m.max_free_core[i]) &
            (q.bytes <= m.max_free_memory[i]);
    }
    fraction = 0.5 * (Fraction(m.gpu_core_used[i], q.core_extra, m.gpu_core_capacity[i]) +
                      Fraction(m.gpu_memory_used[i], memory_extra, m.gpu_memory_capacity[i]));
  } else {
    fraction = 0.5 * (Fraction(m.cpu_used[i], q.cpu, m.cpu_capacity[i]) +
                      Fraction(m.memory_used[i], q.memory, m.memory_capacity[i]));
  }
  const double score = kMost ? 100.0 * fraction : 100.0 * (1.0 - fraction);
  return ok ? score : kNoNode;
}

// SummaryScore for every node: the dense loop of the full scan. The request's figures are
// copied to locals and every condition is computed as a 0/1 mask, so the compiler sees a loop
// without branches and vectorises it. `memory_extra` is per node only for GPU memory asked in
// percent (kPerNodeExtra); otherwise the pod adds the same bytes everywhere.
template <bool kGpuPod, bool kWhole, bool kMost, bool kMasked, bool kPerNodeExtra>
[[gnu::always_inline]] inline void ScanAllNodesBody(const NodeSummaries& summaries,
                                                    const SummaryRequest& q,
                                                    const double* __restrict memory_extra,
                                                    const uint8_t* __restrict allowed,
                                                    double* __restrict out) {
  const SummaryColumns m(summaries);
  const int n = summaries.size();
  const double cpu = q.cpu, memory = q.memory, count = q.count, core = q.core, bytes = q.bytes;
  const double core_extra = q.core_extra, same_extra = q.memory_extra;
  for (int i = 0; i < n; ++i) {
    int ok = (cpu <= m.free_cpu[i]) & (memory <= m.free_memory[i]) & (1.0 <= m.free_pods[i]);
    if constexpr (kMasked) ok &= allowed[i];
    double fraction;
    if constexpr (kGpuPod) {
      if constexpr (kWhole) {
        ok &= count <= m.whole_free[i];
      } else {
        ok &= (count <= m.shared_gpus[i]) & (core <= m.max_free_core[i]) &
              (bytes <= m.max_free_memory[i]);
      }
      const double extra = kPerNodeExtra ? memory_extra[i] : same_extra;
      fraction = 0.5 * (Fraction(m.gpu_core_used[i], core_extra, m.gpu_core_capacity[i]) +
                        Fraction(m.gpu_memory_used[i], extra, m.gpu_memory_capacity[i]));
    } else {
      fraction = 0.5 * (Fraction(m.cpu_used[i], cpu, m.cpu_capacity[i]) +
                        Fraction(m.memory_used[i], memory, m.memory_capacity[i]));
    }
    const double score = kMost ? 100.0 * fraction : 100.0 * (1.0 - fraction);
    out[i] = ok ? score : kNoNode;
  }
}

// The same loop compiled twice: for any x86-64 and, picked at run time, with AVX2 (four doubles
// per division instead of two). Both use only correctly rounded IEEE operations (no fused
// multiply-add is enabled), so they compute identical doubles.
template <bool kGpuPod, bool kWhole, bool kMost, bool kMasked, bool kPerNodeExtra>
void ScanAllNodes(const NodeSummaries& m, const SummaryRequest& q, const double* memory_extra,
                  const uint8_t* allowed, double* out) {
  ScanAllNodesBody<kGpuPod, kWhole, kMost, kMasked, kPerNodeExtra>(m, q, memory_extra, allowed,
                                                                   out);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GPUFLEET_SCAN_AVX2 1
template <bool kGpuPod, bool kWhole, bool kMost, bool kMasked, bool kPerNodeExtra>
[[gnu::target("avx2")]] void ScanAllNodesAvx2(const NodeSummaries& m, const SummaryRequest& q,
                                               const double* memory_extra,
                                               const uint8_t* allowed, double* out) {
  ScanAllNodesBody<kGpuPod, kWhole, kMost, kMasked, kPerNodeExtra>(m, q, memory_extra, allowed,
                                                                   out);
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

template <bool kGpuPod, bool kWhole, bool kMost, bool kMasked, bool kPerNodeExtra>
void ScanOn(const NodeSummaries& m, const SummaryRequest& q, const double* memory_extra,
            const uint8_t* allowed, double* out) {
#ifdef GPUFLEET_SCAN_AVX2
  if (HasAvx2()) {
    ScanAllNodesAvx2<kGpuPod, kWhole, kMost, kMasked, kPerNodeExtra>(m, q, memory_extra, allowed,
                                                                     out);
    return;
  }
#endif
  ScanAllNodes<kGpuPod, kWhole, kMost, kMasked, kPerNodeExtra>(m, q, memory_extra, allowed, out);
}

template <bool kGpuPod, bool kWhole, bool kMost>
void ScanWithExtra(const NodeSummaries& m, const SummaryRequest& q, const double* memory_extra,
                   const uint8_t* allowed, double* out) {
  const bool per_node = kGpuPod && memory_extra != nullptr;
  if (allowed != nullptr) {
    if (per_node)
      ScanOn<kGpuPod, kWhole, kMost, true, true>(m, q, memory_extra, allowed, out);
    else
      ScanOn<kGpuPod, kWhole, kMost, true, false>(m, q, memory_extra, allowed, out);
  } else if (per_node) {
    ScanOn<kGpuPod, kWhole, kMost, false, true>(m, q, memory_extra, allowed, out);
  } else {
    ScanOn<kGpuPod, kWhole, kMost, false, false>(m, q, memory_extra, allowed, out);
  }
}

// `memory_extra`: per node, or null when the pod adds q.memory_extra everywhere.
template <bool kGpuPod, bool kWhole>
void ScanAll(const NodeSummaries& m, const SummaryRequest& q, const double* memory_extra,
             const uint8_t* allowed, bool most, double* out) {
  if (most)
    ScanWithExtra<kGpuPod, kWhole, true>(m, q, memory_extra, allowed, out);
  else
    ScanWithExtra<kGpuPod, kWhole, false>(m, q, memory_extra, allowed, out);
}

template <bool kGpuPod, bool kWhole>
double OneScore(const NodeSummaries& summaries, int i, const SummaryRequest& q,
                double memory_extra, bool most, bool allowed) {
  const SummaryColumns m(summaries);
  return most ? SummaryScore<kGpuPod, kWhole, true>(m, i, q, memory_extra, allowed)
              : SummaryScore<kGpuPod, kWhole, false>(m, i, q, memory_extra, allowed);
}

double ScoreFromSummaries(const NodeSummaries& m, int i, const SummaryRequest& q,
                          double memory_extra, bool most, bool allowed) {
  if (!q.gpu) return OneScore<false, false>(m, i, q, memory_extra, most, allowed);
  if (q.whole) return OneScore<true, true>(m, i, q, memory_extra, most, allowed);
  return OneScore<true, false>(m, i, q, memory_extra, most, allowed);
}

// The first node with the highest score, or -1 when none scores above -1. Two passes (the
// maximum, then its first node) with independent iterations instead of one loop with a branchy
// carried dependency.
// Scores of -1 and below never win (a strategy's scores are in [0, 100]).
int FirstBest(const double* score, int n) {
  double top[4] = {-1.0, -1.0, -1.0, -1.0};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) top[k] = score[i + k] > top[k] ? score[i + k] : top[k];
  for (; i < n; ++i) top[0] = score[i] > top[0] ? score[i] : top[0];
  const double best = std::max(std::max(top[0], top[1]), std::max(top[2], top[3]));
  if (!(best > -1.0)) return -1;
  for (int k = 0; k < n; ++k)
    if (score[k] == best) return k;
  return -1;
}

// True when the summary scan gives exact answers for this pod and strategy.
bool SummaryScanApplies(const ClusterState& state, const PlacementStrategy& strategy,
                        const PodShapeFacts& shape, const SummaryRequest& q) {
  return !shape.needs_plan && strategy.AllocationScoreSign() != 0 && q.exact &&
         state.summaries().oversized == 0;
}

// Fills `memory_extra` (the pod's GPU memory per node) when it differs by node (GPU memory in
// percent of the node's card) and reports whether every value is exact.
bool FillMemoryExtra(const NodeSummaries& m, const SummaryRequest& q,
                     std::vector<double>* memory_extra) {
  if (!q.gpu || !q.by_percent) return true;  // the same q.memory_extra on every node
  const int n = m.size();
  memory_extra->resize(n);
  double* out = memory_extra->data();
  // Nodes of one kind share an average: compute once per run of equal averages.
  int64_t last_average = -1;
  double last = 0;
  bool exact = true;
  for (int i = 0; i < n; ++i) {
    const int64_t average = m.gpu_memory_average[i];
    if (average != last_average) {
      last_average = average;
      const int64_t bytes = q.PercentBytes(average);
      exact = exact && bytes < NodeSummaries::kExactLimit;
      last = static_cast<double>(bytes);
    }
    out[i] = last;
  }
  return exact;
}

// Nodes whose labels and taints admit the pod (1) or not (0); null when every node does.
const uint8_t* AllowedNodes(const ClusterState& state, const Pod& pod,
                            std::vector<uint8_t>* allowed) {
  const NodeSummaries& m = state.summaries();
  const bool selector = !pod.node_selector.empty();
  if (!selector && m.tainted == 0) return nullptr;
  allowed->assign(m.size(), 1);
  for (int i = 0; i < m.size(); ++i)
    if (selector || m.has_taints[i]) (*allowed)[i] = FitsNodeConstraints(pod, state.node(i)).ok();
  return allowed->data();
}

}  // namespace

FitResult PlanOnNode(const ClusterState& state, const Pod& pod, int node,
                     const PlacementStrategy& strategy, Allocation* plan) {
  FitResult fit = state.Filter(pod, node);
  if (!fit.ok()) return fit;
  NodeView view = state.View(node);
  Allocation a;
  a.pod = pod.name;
  a.node = state.node(node).name;
  a.cpu_milli = pod.cpu_milli;
  a.memory_bytes = pod.memory_bytes;
  std::vector<std::vector<int>> domains;
  std::vector<int> chosen, gpus;
  // Requests are sorted by type, so GPUs ("gpu") are chosen before NICs ("rdma").
  for (const DeviceRequest& r : pod.devices) {
    if (NodeHasVfNics(view) && r.type == kRdma) {  // NICs with SR-IOV VFs: rdma_vf_plan.h
      FitResult f = PlanVfGrants(view, pod, r, gpus, strategy, &a.devices);
      if (!f.ok()) return f;
      continue;
    }
    domains.clear();
    FitResult f = FitDeviceRequest(view, pod, r, &domains);
    if (!f.ok()) return f;
    chosen.clear();
    if (r.type != kGpu && !gpus.empty()) PreferNearGpus(view, gpus, r, strategy, domains, &chosen);
    if (chosen.empty() && (!strategy.ChooseDevices(view, r, domains, &chosen) ||
                           static_cast<int>(chosen.size()) != r.count))
      return FitResult::Unschedulable(absl::StrFormat("no %s devices satisfy the request", r.type));
    if (r.type == kGpu) gpus = chosen;
    for (int d : chosen) {
      const Device& dev = view.device(d);
      DeviceGrant g;
      g.type = dev.type;
      g.minor = dev.minor;
      g.core = r.whole() ? dev.core : r.core;
      g.memory_bytes = r.whole() ? dev.memory_bytes : RequestBytesOn(r, dev);
      a.devices.push_back(std::move(g));
    }
  }
  *plan = std::move(a);
  return FitResult::Ok();
}



double ScoreOnNode(const ClusterState& state, const Pod& pod, int node,
                   const PlacementStrategy& strategy) {
  NodeView view = state.View(node);
  if (!strategy.ScoreNeedsPlan()) return strategy.ScoreNode(view, pod, {});
  Allocation plan;
  if (!PlanOnNode(state, pod, node, strategy, &plan).ok()) return 0.0;
  return strategy.ScoreNode(view, pod, plan.devices);
}

std::string NoFitReason(const ClusterState& state, const Pod& pod,
                        const std::vector<int>* candidates) {
  const int total = candidates ? static_cast<int>(candidates->size()) : state.num_nodes();
  std::map<std::string, int> reasons;
  for (int k = 0; k < total; ++k) {
    int i = candidates ? (*candidates)[k] : k;
    FitResult f = FitsNodeConstraints(pod, state.node(i));
    if (f.ok()) f = state.Filter(pod, i);
    if (f.ok()) f = FitResult::Unschedulable("no devices satisfy the request");
    ++reasons[f.reason];
  }
  return NodesUnavailable(total, reasons);
}

namespace {

// The best node by `score` (maybe-feasible scores from the summaries, kNoNode elsewhere) that
// really fits, trying nodes in score order (ties to the earlier node); nodes that do not fit are
// set to kNoNode. Summaries are a necessary condition only: the devices decide. After a few
// misses every remaining candidate is checked at once, so the cost never exceeds a plain scan.
int BestThatFits(const ClusterState& state, const Pod& pod, const PodShapeFacts& shape,
                 double* score, int n) {
  constexpr int kMissesBeforeSweep = 8;
  for (int misses = 0;; ++misses) {
    if (misses == kMissesBeforeSweep) {
      for (int i = 0; i < n; ++i)
        if (score[i] != kNoNode && !NodeFits(state, pod, i, shape)) score[i] = kNoNode;
    }
    const int best = FirstBest(score, n);
    if (best < 0 || misses >= kMissesBeforeSweep || NodeFits(state, pod, best, shape))
      return best;
    score[best] = kNoNode;
  }
}

// BestThatFits over a cached entry: the tree names the best node, a miss is replayed up the
// tree, and the sweep after a few misses rebuilds it. The same answer as FirstBest's.
int BestThatFitsTree(const ClusterState& state, const Pod& pod, const PodShapeFacts& shape,
                     double* score, BestScoreTree* tree, int n) {
  constexpr int kMissesBeforeSweep = 8;
  for (int misses = 0;; ++misses) {
    if (misses == kMissesBeforeSweep) {
      for (int i = 0; i < n; ++i)
        if (score[i] != kNoNode && !NodeFits(state, pod, i, shape)) score[i] = kNoNode;
      tree->Build(score, n);
    }
    const int best = tree->Best();
    if (best < 0 || !(score[best] > -1.0)) return -1;
    if (misses >= kMissesBeforeSweep || NodeFits(state, pod, best, shape)) return best;
    score[best] = kNoNode;
    tree->Update(score, best);
  }
}

}  // namespace

int Placer::ChooseAmong(const ClusterState& state, const Pod& pod,
                        const PlacementStrategy& strategy, const std::vector<int>* candidates,
                        Allocation* plan, bool* have_plan) {
  // Every node (or candidate) filtered and scored exactly, one at a time.
  const PodShapeFacts shape(pod, strategy);
  const int total = candidates ? static_cast<int>(candidates->size()) : state.num_nodes();
  *have_plan = shape.needs_plan;
  return BestByExactScore(
      state, pod, strategy, shape, total,
      [candidates](int k) { return candidates ? (*candidates)[k] : k; },
      [](int) { return false; }, plan);
}

int Placer::ChooseScanning(const ClusterState& state, const Pod& pod,
                           const PlacementStrategy& strategy, Allocation* plan, bool* have_plan) {
  const PodShapeFacts shape(pod, strategy);
  const SummaryRequest q(pod);
  const NodeSummaries& m = state.summaries();
  const int n = m.size();
  const bool scan = FillMemoryExtra(m, q, &memory_extra_) && q.exact &&
                    state.summaries().oversized == 0;
  if (!scan) return ChooseAmong(state, pod, strategy, nullptr, plan, have_plan);
  const uint8_t* allowed = AllowedNodes(state, pod, &allowed_);
  const bool most = strategy.AllocationScoreSign() > 0;
  scores_.resize(n);
  double* score = scores_.data();
  const double* extra = q.gpu && q.by_percent ? memory_extra_.data() : nullptr;
  if (!q.gpu)
    ScanAll<false, false>(m, q, extra, allowed, most, score);
  else if (q.whole)
    ScanAll<true, true>(m, q, extra, allowed, most, score);
  else
    ScanAll<true, false>(m, q, extra, allowed, most, score);
  if (SummaryScanApplies(state, strategy, shape, q)) {
    *have_plan = false;
    return BestThatFits(state, pod, shape, score, n);
  }
  // Other strategies: the summaries rule nodes out, the strategy scores the rest in node order.
  *have_plan = shape.needs_plan;
  return BestByExactScore(
      state, pod, strategy, shape, n, [](int k) { return k; },
      [score](int i) { return score[i] == kNoNode; }, plan);
}

int Placer::ChooseCached(const ClusterState& state, const Pod& pod,
                         const PlacementStrategy& strategy) {
  const PodShapeFacts shape(pod, strategy);
  const SummaryRequest q(pod);
  const NodeSummaries& m = state.summaries();
  const int n = state.num_nodes();
  NodeScoreCache::Entry& e = score_cache_.Get(strategy.instance_id(), pod, n);
  const uint64_t* version = state.node_versions();
  uint64_t* seen = e.seen.data();
  double* score = e.score.data();
  // The nodes changed since this entry last looked: from the state's change log when the entry
  // read this very log and its position is still there, else by comparing every version.
  const ChangeLog& log = state.changes();
  const bool from_log =
      e.log_id == log.id() && e.log_position >= log.begin() && e.best.size() == n;
  changed_.clear();
  if (from_log) {
    for (uint64_t p = e.log_position; p < log.end(); ++p) {
      const int i = log.at(p);
      if (seen[i] != version[i]) {
        changed_.push_back(i);
        seen[i] = version[i];
      }
    }
  } else {
    for (int i = 0; i < n; ++i) {
      if (seen[i] != version[i]) {
        changed_.push_back(i);
        seen[i] = version[i];
      }
    }
  }
  e.log_id = log.id();
  e.log_position = log.end();
  // Scores from the summaries are kept as they are (maybe feasible) and checked against the
  // devices when they come out on top; a node found not to fit keeps kNoNode until it changes.
  const bool from_summaries = SummaryScanApplies(state, strategy, shape, q);
  const bool most = strategy.AllocationScoreSign() > 0;
  Allocation scratch;
  for (int i : changed_) {
    double s;
    if (from_summaries) {
      const int64_t percent_bytes =
          q.gpu && q.by_percent ? q.PercentBytes(m.gpu_memory_average[i]) : 0;
      if (percent_bytes >= NodeSummaries::kExactLimit) {
        s = ExactScore(state, pod, i, strategy, shape, &scratch);
      } else {
        const double extra =
            q.gpu && q.by_percent ? static_cast<double>(percent_bytes) : q.memory_extra;
        const bool allowed = !(shape.check_constraints || m.has_taints[i]) ||
                             FitsNodeConstraints(pod, state.node(i)).ok();
        s = ScoreFromSummaries(m, i, q, extra, most, allowed);
      }
    } else {
      s = ExactScore(state, pod, i, strategy, shape, &scratch);
    }
    // A NaN never wins the scan (FirstBest); stored as kNoNode it never wins the tree either.
    score[i] = s == s ? s : kNoNode;
    if (from_log) e.best.Update(score, i);
  }
  if (!from_log) e.best.Build(score, n);
  // Exact scores pass the device check at once; summary scores are checked here.
  return BestThatFitsTree(state, pod, shape, score, &e.best, n);
}

absl::StatusOr<int> Placer::Choose(const ClusterState& state, const Pod& pod,
                                   const PlacementStrategy& strategy,
                                   const std::vector<int>* candidates, Allocation* plan) {
  int best;
  bool have_plan = false;
  if (candidates != nullptr) {
    best = ChooseAmong(state, pod, strategy, candidates, plan, &have_plan);
  } else if (score_cache_enabled_ && strategy.Deterministic()) {
    best = ChooseCached(state, pod, strategy);
  } else {
    best = ChooseScanning(state, pod, strategy, plan, &have_plan);
  }
  if (best < 0) {
    // Only now pay for exact reasons.
    return absl::FailedPreconditionError(NoFitReason(state, pod, candidates));
  }
  if (!have_plan) {
    FitResult f = PlanOnNode(state, pod, best, strategy, plan);
    if (!f.ok()) return absl::FailedPreconditionError(f.reason);
  }
  return best;
}

const NodeClasses& Placer::ClassesFor(const ClusterState& state) {
  std::unique_ptr<NodeClasses>& c = classes_.classes;
  if (c == nullptr || !c->Follows(state) || !c->Sync()) c = std::make_unique<NodeClasses>(state);
  return *c;
}

absl::StatusOr<int> Placer::ChooseWithTerms(const ClusterState& state, const Pod& pod,
                                            const PlacementStrategy& strategy,
                                            const PlacementTerms& terms, Allocation* plan) {
  const NodeClasses* classes = terms.UsesNodeClasses() ? &ClassesFor(state) : nullptr;
  const DeviceRequest* gpu = pod.Find(kGpu);  // looked up once, not per node
  int best = -1;
  double best_score = -std::numeric_limits<double>::infinity();
  auto consider = [&](int i) {
    if (!QuickMayFit(pod, gpu, state.usage(i))) return;
    if (!terms.Filter(pod, i).ok()) return;
    const double score = terms.Score(pod, i);
    if (score > best_score || (score == best_score && i < best)) {
      best_score = score;
      best = i;
    }
  };
  if (classes != nullptr) {
    for (int c : classes->live()) consider(classes->representative(c));
  } else {
    for (int i = 0; i < state.num_nodes(); ++i) consider(i);
  }
  if (best >= 0) {
    FitResult f = PlanOnNode(state, pod, best, strategy, plan);
    if (f.ok()) return best;
    return absl::FailedPreconditionError(f.reason);
  }
  // Only now pay for exact reasons: every class counts as many nodes as it has.
  std::map<std::string, int> counts;
  auto count = [&](int i, int weight) {
    FitResult f = terms.Filter(pod, i);
    if (f.ok()) f = state.Filter(pod, i);
    counts[f.ok() ? std::string("no devices satisfy the request") : f.reason] += weight;
  };
  if (classes != nullptr) {
    for (int c : classes->live())
      count(classes->representative(c), static_cast<int>(classes->members(c).size()));
  } else {
    for (int i = 0; i < state.num_nodes(); ++i) count(i, 1);
  }
  return absl::FailedPreconditionError(NodesUnavailable(state.num_nodes(), counts));
}

PlaceResult Placer::Place(ClusterState& state, const Pod& pod, const PlacementStrategy& strategy,
                          bool commit, const std::vector<int>* candidates) {
  PlaceResult result;
  if (state.FindAllocation(pod.name) != nullptr) {
    result.reason = absl::StrFormat("pod %s is already placed", pod.name);
    return result;
  }
  Allocation plan;
  if (absl::StatusOr<int> best = Choose(state, pod, strategy, candidates, &plan); !best.ok()) {
    result.reason = std::string(best.status().message());
    return result;
  }
  absl::Status s = state.Reserve(plan);
  if (s.ok() && commit) s = state.Commit(pod.name);
  if (!s.ok()) {
    result.reason = std::string(s.message());
    return result;
  }
  result.placed = true;
  result.allocation = *state.FindAllocation(pod.name);
  return result;
}

}  // namespace gpufleet

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
