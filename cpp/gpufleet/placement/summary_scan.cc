#include "gpufleet/placement/summary_scan.h"

#include <algorithm>

#include "gpufleet/placement/node_score.h"

// The scan's loops compute every operation on every node and select afterwards, so assuming no
// floating-point traps lets the compiler vectorise them without changing any value. Pushed and
// popped so that a unity build's other files keep their options.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

namespace gpufleet {

SummaryRequest::SummaryRequest(const Pod& pod) {
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

namespace {

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
                            const NodeAdmission& admission, std::vector<uint8_t>* allowed) {
  const NodeSummaries& m = state.summaries();
  if (pod.node_selector.empty() && m.tainted == 0) return nullptr;
  allowed->resize(m.size());
  for (int i = 0; i < m.size(); ++i) (*allowed)[i] = admission.Constraints(i);
  return allowed->data();
}

}  // namespace

bool SummaryScan::ScoresAreExact(const ClusterState& state, const PlacementStrategy& strategy,
                                 const SummaryRequest& q) {
  return !strategy.ScoreNeedsPlan() && strategy.AllocationScoreSign() != 0 && q.exact &&
         state.summaries().oversized == 0;
}

bool SummaryScan::ScoreAll(const ClusterState& state, const NodeAdmission& admission,
                           const SummaryRequest& q, bool most, double* score) {
  const NodeSummaries& m = state.summaries();
  if (!q.exact || m.oversized != 0 || !FillMemoryExtra(m, q, &memory_extra_)) return false;
  const uint8_t* allowed = AllowedNodes(state, admission.pod(), admission, &allowed_);
  const double* extra = q.gpu && q.by_percent ? memory_extra_.data() : nullptr;
  if (!q.gpu)
    ScanAll<false, false>(m, q, extra, allowed, most, score);
  else if (q.whole)
    ScanAll<true, true>(m, q, extra, allowed, most, score);
  else
    ScanAll<true, false>(m, q, extra, allowed, most, score);
  return true;
}

bool SummaryScan::ScoreOne(const ClusterState& state, const NodeAdmission& admission,
                           const SummaryRequest& q, bool most, int i, double* score) {
  const NodeSummaries& m = state.summaries();
  const int64_t percent_bytes = q.gpu && q.by_percent ? q.PercentBytes(m.gpu_memory_average[i]) : 0;
  if (percent_bytes >= NodeSummaries::kExactLimit) return false;
  const double extra = q.gpu && q.by_percent ? static_cast<double>(percent_bytes) : q.memory_extra;
  *score = ScoreFromSummaries(m, i, q, extra, most, admission.Constraints(i));
  return true;
}

// Two passes (the maximum, then its first node) with independent iterations instead of one loop
// with a branchy carried dependency.
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

}  // namespace gpufleet

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
