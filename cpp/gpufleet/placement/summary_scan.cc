#include "gpufleet/placement/summary_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpufleet/placement/node_score.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GPUFLEET_SCAN_X86 1
#include <immintrin.h>
#endif

// The scan's loops compute every operation on every node and select afterwards, so assuming no
// floating-point traps lets the compiler vectorise them without changing any value; no multiply
// and add is fused, so every build rounds each operation alike. Pushed and popped so that a unity
// build's other files keep their options.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "fp-contract=off")
#endif

namespace gpufleet {
namespace {

// Rounded toward admitting, as the feasibility columns are: a request no larger than itself.
int32_t Int32AtMost(int64_t v) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v > kMax ? kMax : v < kMin ? kMin : v);
}

enum class PodKind { kCpu, kWhole, kShared };

// Dense column pointers of NodeSummaries, so the loops read plain arrays.
struct Columns {
  const int32_t* __restrict free_cpu;
  const float* __restrict free_memory;
  const int32_t* __restrict whole_free;
  const int32_t* __restrict shared_gpus;
  const int32_t* __restrict max_free_core;
  const float* __restrict max_free_memory;
  const int32_t* __restrict cpu_used;
  const int32_t* __restrict cpu_capacity;
  const double* __restrict memory_used;
  const double* __restrict memory_capacity;
  const int32_t* __restrict core_used;
  const int32_t* __restrict core_capacity;
  const double* __restrict gpu_memory_used;
  const double* __restrict gpu_memory_capacity;
  const double* __restrict gpu_memory_average;

  explicit Columns(const NodeSummaries& m)
      : free_cpu(m.free_cpu.data()),
        free_memory(m.free_memory.data()),
        whole_free(m.whole_free.data()),
        shared_gpus(m.shared_gpus.data()),
        max_free_core(m.max_free_core.data()),
        max_free_memory(m.max_free_memory.data()),
        cpu_used(m.cpu_used.data()),
        cpu_capacity(m.cpu_capacity.data()),
        memory_used(m.memory_used.data()),
        memory_capacity(m.memory_capacity.data()),
        core_used(m.gpu_core_used.data()),
        core_capacity(m.gpu_core_capacity.data()),
        gpu_memory_used(m.gpu_memory_used.data()),
        gpu_memory_capacity(m.gpu_memory_capacity.data()),
        gpu_memory_average(m.gpu_memory_average.data()) {}
};

// min(1, (used + extra) / capacity), 0 without capacity: AllocatedFractionAfter's term, on
// exact doubles.
inline double Fraction(double used, double extra, double capacity) {
  const double x = (used + extra) / capacity;
  const double clamped = x < 1.0 ? x : 1.0;
  return capacity > 0.0 ? clamped : 0.0;
}

// Node i's score from the summaries (the same doubles as the strategy's ScoreNode), or kNoNode
// when the summaries (or `allowed`, the node's labels and taints) rule the node out. Everything
// is computed and then selected, so a loop over nodes has no branches. A pod asking GPU memory
// in percent adds floor(percent * average / 100) * count on the node: every step is exact in
// doubles (SummaryRequest bounds the percent and count, NodeSummaries the average), and a whole
// GPU (100 percent) adds the average card exactly, so that case skips the division.
template <PodKind K, bool kMost, bool kPercent>
inline double NodeScore(const Columns& c, const SummaryRequest& q, int i, bool allowed) {
  bool ok = (q.cpu <= c.free_cpu[i]) & (q.memory <= c.free_memory[i]) & allowed;
  double fraction;
  if constexpr (K == PodKind::kCpu) {
    fraction = 0.5 * (Fraction(c.cpu_used[i], q.cpu_extra, c.cpu_capacity[i]) +
                      Fraction(c.memory_used[i], q.memory_extra, c.memory_capacity[i]));
  } else {
    if constexpr (K == PodKind::kWhole) {
      ok &= q.count <= c.whole_free[i];
    } else {
      ok &= (q.count <= c.shared_gpus[i]) & (q.core <= c.max_free_core[i]) &
            (q.bytes <= c.max_free_memory[i]);
    }
    double extra = q.gpu_memory_extra;
    if constexpr (kPercent) {
      const double average = c.gpu_memory_average[i];
      extra = K == PodKind::kWhole ? average * q.count_extra
                                   : std::floor(q.percent * average / 100.0) * q.count_extra;
    }
    fraction = 0.5 * (Fraction(c.core_used[i], q.core_extra, c.core_capacity[i]) +
                      Fraction(c.gpu_memory_used[i], extra, c.gpu_memory_capacity[i]));
  }
  const double score = kMost ? 100.0 * fraction : 100.0 * (1.0 - fraction);
  return ok ? score : kNoNode;
}

using ScanResult = SummaryScan::Result;

// The first best of per-lane bests: each lane holds its first highest score (later equal scores
// never replace it), so the answer is the lowest index among the lanes holding the top score.
template <int kLanes, typename Index>
int FirstOfLanes(const double* best, const Index* index) {
  double top = -1.0;
  for (int k = 0; k < kLanes; ++k) top = best[k] > top ? best[k] : top;
  if (!(top > -1.0)) return -1;
  int first = -1;
  for (int k = 0; k < kLanes; ++k) {
    const int at = static_cast<int>(index[k]);
    if (best[k] == top && (first < 0 || at < first)) first = at;
  }
  return first;
}

// NodeScore over nodes [from, n), storing each score when `out` is not null and keeping the first
// best above `*top` (in `*best`): the loop for any CPU, and the tail of the vector loops.
template <PodKind K, bool kMost, bool kPercent>
void ScalarRange(const Columns& c, const SummaryRequest& q, const uint8_t* allowed, int from,
                 int n, double* out, double* top, int* best) {
  for (int i = from; i < n; ++i) {
    const double s = NodeScore<K, kMost, kPercent>(c, q, i, allowed == nullptr || allowed[i]);
    if (out != nullptr) out[i] = s;
    if (s > *top) {
      *top = s;
      *best = i;
    }
  }
}

// The loop for any CPU: every score stored (into `out`, or `scratch`), in a plain loop the
// compiler may vectorise for the target, then the first best of the stored scores.
template <PodKind K, bool kMost, bool kPercent>
int PortableScan(const Columns& c, const SummaryRequest& q, const uint8_t* allowed, int n,
                 double* out, std::vector<double>* scratch) {
  if (out == nullptr) {
    scratch->resize(n);
    out = scratch->data();
  }
  if (allowed != nullptr) {
    for (int i = 0; i < n; ++i) out[i] = NodeScore<K, kMost, kPercent>(c, q, i, allowed[i] != 0);
  } else {
    for (int i = 0; i < n; ++i) out[i] = NodeScore<K, kMost, kPercent>(c, q, i, true);
  }
  return FirstBest(out, n);
}

#ifdef GPUFLEET_SCAN_X86
#define GPUFLEET_AVX2 [[gnu::target("avx2")]]

GPUFLEET_AVX2 inline __m256d Fraction4(__m256d used, __m256d extra, __m256d capacity) {
  const __m256d x = _mm256_div_pd(_mm256_add_pd(used, extra), capacity);
  // x < 1 ? x : 1, as Fraction selects (min returns its second operand unless x < 1), and +0
  // without capacity.
  const __m256d clamped = _mm256_min_pd(x, _mm256_set1_pd(1.0));
  return _mm256_and_pd(clamped, _mm256_cmp_pd(capacity, _mm256_setzero_pd(), _CMP_GT_OQ));
}

GPUFLEET_AVX2 inline __m256d Widen4(const int32_t* p) {
  return _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// All ones in the 32-bit lanes where q <= v.
GPUFLEET_AVX2 inline __m128i AtMost4(int32_t q, const int32_t* v) {
  return _mm_andnot_si128(
      _mm_cmpgt_epi32(_mm_set1_epi32(q), _mm_loadu_si128(reinterpret_cast<const __m128i*>(v))),
      _mm_set1_epi32(-1));
}
GPUFLEET_AVX2 inline __m128i AtMost4(float q, const float* v) {
  return _mm_castps_si128(_mm_cmp_ps(_mm_set1_ps(q), _mm_loadu_ps(v), _CMP_LE_OQ));
}

// NodeScore for nodes i..i+3, with the same operations in the same order.
template <PodKind K, bool kMost, bool kPercent>
GPUFLEET_AVX2 inline __m256d NodeScore4(const Columns& c, const SummaryRequest& q,
                                        const uint8_t* allowed, int i) {
  __m128i ok = _mm_and_si128(AtMost4(q.cpu, c.free_cpu + i), AtMost4(q.memory, c.free_memory + i));
  if (allowed != nullptr) {
    int32_t bytes;
    std::memcpy(&bytes, allowed + i, sizeof bytes);
    const __m128i admitted = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(bytes));
    ok = _mm_andnot_si128(_mm_cmpeq_epi32(admitted, _mm_setzero_si128()), ok);
  }
  const __m256d half = _mm256_set1_pd(0.5);
  __m256d fraction;
  if constexpr (K == PodKind::kCpu) {
    const __m256d cpu = Fraction4(Widen4(c.cpu_used + i), _mm256_set1_pd(q.cpu_extra),
                                  Widen4(c.cpu_capacity + i));
    const __m256d memory =
        Fraction4(_mm256_loadu_pd(c.memory_used + i), _mm256_set1_pd(q.memory_extra),
                  _mm256_loadu_pd(c.memory_capacity + i));
    fraction = _mm256_mul_pd(half, _mm256_add_pd(cpu, memory));
  } else {
    if constexpr (K == PodKind::kWhole) {
      ok = _mm_and_si128(ok, AtMost4(q.count, c.whole_free + i));
    } else {
      ok = _mm_and_si128(ok, AtMost4(q.count, c.shared_gpus + i));
      ok = _mm_and_si128(ok, AtMost4(q.core, c.max_free_core + i));
      ok = _mm_and_si128(ok, AtMost4(q.bytes, c.max_free_memory + i));
    }
    __m256d extra = _mm256_set1_pd(q.gpu_memory_extra);
    if constexpr (kPercent) {
      const __m256d average = _mm256_loadu_pd(c.gpu_memory_average + i);
      const __m256d count_extra = _mm256_set1_pd(q.count_extra);
      if constexpr (K == PodKind::kWhole) {
        extra = _mm256_mul_pd(average, count_extra);
      } else {
        const __m256d share = _mm256_div_pd(_mm256_mul_pd(_mm256_set1_pd(q.percent), average),
                                            _mm256_set1_pd(100.0));
        extra = _mm256_mul_pd(_mm256_round_pd(share, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),
                              count_extra);
      }
    }
    const __m256d core = Fraction4(Widen4(c.core_used + i), _mm256_set1_pd(q.core_extra),
                                   Widen4(c.core_capacity + i));
    const __m256d memory = Fraction4(_mm256_loadu_pd(c.gpu_memory_used + i), extra,
                                     _mm256_loadu_pd(c.gpu_memory_capacity + i));
    fraction = _mm256_mul_pd(half, _mm256_add_pd(core, memory));
  }
  const __m256d hundred = _mm256_set1_pd(100.0);
  const __m256d score =
      kMost ? _mm256_mul_pd(hundred, fraction)
            : _mm256_mul_pd(hundred, _mm256_sub_pd(_mm256_set1_pd(1.0), fraction));
  return _mm256_blendv_pd(_mm256_set1_pd(kNoNode), score,
                          _mm256_castsi256_pd(_mm256_cvtepi32_epi64(ok)));
}

template <PodKind K, bool kMost, bool kPercent>
GPUFLEET_AVX2 int Avx2Scan(const Columns& columns, const SummaryRequest& request,
                           const uint8_t* allowed, int n, double* out) {
  // Local copies: the stores to `out` cannot alias them, so the loop keeps them in registers.
  const Columns c = columns;
  const SummaryRequest q = request;
  __m256d best = _mm256_set1_pd(-1.0);
  __m256d index = _mm256_set1_pd(-1.0);  // node indices, exact in doubles
  __m256d at = _mm256_setr_pd(0, 1, 2, 3);
  const __m256d four = _mm256_set1_pd(4.0);
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d score = NodeScore4<K, kMost, kPercent>(c, q, allowed, i);
    if (out != nullptr) _mm256_storeu_pd(out + i, score);
    // Strictly greater: a lane keeps its first best.
    const __m256d up = _mm256_cmp_pd(score, best, _CMP_GT_OQ);
    best = _mm256_blendv_pd(best, score, up);
    index = _mm256_blendv_pd(index, at, up);
    at = _mm256_add_pd(at, four);
  }
  alignas(32) double lane_best[4], lane_index[4];
  _mm256_store_pd(lane_best, best);
  _mm256_store_pd(lane_index, index);
  // The rest in lane 0: later than every node it holds, so its first best stays first.
  int tail_best = static_cast<int>(lane_index[0]);
  ScalarRange<K, kMost, kPercent>(c, q, allowed, i, n, out, &lane_best[0], &tail_best);
  lane_index[0] = tail_best;
  return FirstOfLanes<4>(lane_best, lane_index);
}

#define GPUFLEET_AVX512 [[gnu::target("avx512f,avx512vl,avx512bw,avx512dq")]]
// GCC 12's own intrinsics headers trip -Wmaybe-uninitialized (their "undefined" source vectors).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

GPUFLEET_AVX512 inline __m512d Fraction8(__m512d used, __m512d extra, __m512d capacity) {
  const __m512d x = _mm512_div_pd(_mm512_add_pd(used, extra), capacity);
  // x < 1 ? x : 1, as Fraction selects (min returns its second operand unless x < 1).
  const __m512d clamped = _mm512_min_pd(x, _mm512_set1_pd(1.0));
  return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(capacity, _mm512_setzero_pd(), _CMP_GT_OQ),
                             clamped);
}

GPUFLEET_AVX512 inline __m512d WidenInt(const int32_t* p, __mmask8 lanes) {
  return _mm512_cvtepi32_pd(_mm256_maskz_loadu_epi32(lanes, p));
}

// NodeScore for nodes i..i+7 (the lanes in `lanes`), with the same operations in the same order.
template <PodKind K, bool kMost, bool kPercent>
GPUFLEET_AVX512 inline __m512d NodeScore8(const Columns& c, const SummaryRequest& q,
                                          const uint8_t* allowed, int i, __mmask8 lanes) {
  __mmask8 ok = lanes;
  ok &= _mm256_cmp_epi32_mask(_mm256_set1_epi32(q.cpu),
                              _mm256_maskz_loadu_epi32(lanes, c.free_cpu + i), _MM_CMPINT_LE);
  ok &= _mm256_cmp_ps_mask(_mm256_set1_ps(q.memory),
                           _mm256_maskz_loadu_ps(lanes, c.free_memory + i), _CMP_LE_OQ);
  if (allowed != nullptr) {
    const __m128i admitted = _mm_maskz_loadu_epi8(lanes, allowed + i);
    ok &= static_cast<__mmask8>(_mm_test_epi8_mask(admitted, admitted));
  }
  const __m512d half = _mm512_set1_pd(0.5);
  __m512d fraction;
  if constexpr (K == PodKind::kCpu) {
    const __m512d cpu = Fraction8(WidenInt(c.cpu_used + i, lanes), _mm512_set1_pd(q.cpu_extra),
                                  WidenInt(c.cpu_capacity + i, lanes));
    const __m512d memory = Fraction8(_mm512_maskz_loadu_pd(lanes, c.memory_used + i),
                                     _mm512_set1_pd(q.memory_extra),
                                     _mm512_maskz_loadu_pd(lanes, c.memory_capacity + i));
    fraction = _mm512_mul_pd(half, _mm512_add_pd(cpu, memory));
  } else {
    const __m256i count = _mm256_set1_epi32(q.count);
    if constexpr (K == PodKind::kWhole) {
      ok &= _mm256_cmp_epi32_mask(count, _mm256_maskz_loadu_epi32(lanes, c.whole_free + i),
                                  _MM_CMPINT_LE);
    } else {
      ok &= _mm256_cmp_epi32_mask(count, _mm256_maskz_loadu_epi32(lanes, c.shared_gpus + i),
                                  _MM_CMPINT_LE);
      ok &= _mm256_cmp_epi32_mask(_mm256_set1_epi32(q.core),
                                  _mm256_maskz_loadu_epi32(lanes, c.max_free_core + i),
                                  _MM_CMPINT_LE);
      ok &= _mm256_cmp_ps_mask(_mm256_set1_ps(q.bytes),
                               _mm256_maskz_loadu_ps(lanes, c.max_free_memory + i), _CMP_LE_OQ);
    }
    __m512d extra = _mm512_set1_pd(q.gpu_memory_extra);
    if constexpr (kPercent) {
      const __m512d average = _mm512_maskz_loadu_pd(lanes, c.gpu_memory_average + i);
      const __m512d count_extra = _mm512_set1_pd(q.count_extra);
      if constexpr (K == PodKind::kWhole) {
        extra = _mm512_mul_pd(average, count_extra);
      } else {
        const __m512d share = _mm512_div_pd(_mm512_mul_pd(_mm512_set1_pd(q.percent), average),
                                            _mm512_set1_pd(100.0));
        extra = _mm512_mul_pd(
            _mm512_roundscale_pd(share, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), count_extra);
      }
    }
    const __m512d core = Fraction8(WidenInt(c.core_used + i, lanes), _mm512_set1_pd(q.core_extra),
                                   WidenInt(c.core_capacity + i, lanes));
    const __m512d memory = Fraction8(_mm512_maskz_loadu_pd(lanes, c.gpu_memory_used + i), extra,
                                     _mm512_maskz_loadu_pd(lanes, c.gpu_memory_capacity + i));
    fraction = _mm512_mul_pd(half, _mm512_add_pd(core, memory));
  }
  const __m512d hundred = _mm512_set1_pd(100.0);
  const __m512d score =
      kMost ? _mm512_mul_pd(hundred, fraction)
            : _mm512_mul_pd(hundred, _mm512_sub_pd(_mm512_set1_pd(1.0), fraction));
  return _mm512_mask_mov_pd(_mm512_set1_pd(kNoNode), ok, score);
}

// One step of the AVX-512 loop: nodes i..i+7 (those in `lanes`) scored, stored when `out` is not
// null, and each lane's first best kept (strictly greater replaces, so a lane keeps its first;
// lanes past the end score kNoNode).
template <PodKind K, bool kMost, bool kPercent>
GPUFLEET_AVX512 inline void Step8(const Columns& c, const SummaryRequest& q,
                                  const uint8_t* allowed, int i, __mmask8 lanes, double* out,
                                  __m512d& best, __m256i& index, __m256i at) {
  const __m512d score = NodeScore8<K, kMost, kPercent>(c, q, allowed, i, lanes);
  if (out != nullptr) _mm512_mask_storeu_pd(out + i, lanes, score);
  const __mmask8 up = _mm512_cmp_pd_mask(score, best, _CMP_GT_OQ);
  best = _mm512_mask_mov_pd(best, up, score);
  index = _mm256_mask_mov_epi32(index, up, at);
}

template <PodKind K, bool kMost, bool kPercent>
GPUFLEET_AVX512 int Avx512Scan(const Columns& columns, const SummaryRequest& request,
                               const uint8_t* allowed, int n, double* out) {
  // Local copies: the stores to `out` cannot alias them, so the loop keeps them in registers.
  const Columns c = columns;
  const SummaryRequest q = request;
  __m512d best = _mm512_set1_pd(-1.0);
  __m256i index = _mm256_set1_epi32(-1);
  __m256i at = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i eight = _mm256_set1_epi32(8);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    Step8<K, kMost, kPercent>(c, q, allowed, i, 0xff, out, best, index, at);
    at = _mm256_add_epi32(at, eight);
  }
  if (i < n) {
    const __mmask8 lanes = static_cast<__mmask8>((1u << (n - i)) - 1);
    Step8<K, kMost, kPercent>(c, q, allowed, i, lanes, out, best, index, at);
  }
  alignas(64) double lane_best[8];
  alignas(32) int lane_index[8];
  _mm512_store_pd(lane_best, best);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_index), index);
  return FirstOfLanes<8>(lane_best, lane_index);
}

#pragma GCC diagnostic pop

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq");
  return has;
}
#endif  // GPUFLEET_SCAN_X86

template <PodKind K, bool kMost, bool kPercent>
int ScanOn(ScanPath path, const Columns& c, const SummaryRequest& q, const uint8_t* allowed,
           int n, double* out, std::vector<double>* scratch) {
#ifdef GPUFLEET_SCAN_X86
  if (path == ScanPath::kAvx512) return Avx512Scan<K, kMost, kPercent>(c, q, allowed, n, out);
  if (path == ScanPath::kAvx2) return Avx2Scan<K, kMost, kPercent>(c, q, allowed, n, out);
#endif
  return PortableScan<K, kMost, kPercent>(c, q, allowed, n, out, scratch);
}

template <PodKind K, bool kPercent>
int ScanWithSign(ScanPath path, bool most, const Columns& c, const SummaryRequest& q,
                 const uint8_t* allowed, int n, double* out, std::vector<double>* scratch) {
  return most ? ScanOn<K, true, kPercent>(path, c, q, allowed, n, out, scratch)
              : ScanOn<K, false, kPercent>(path, c, q, allowed, n, out, scratch);
}

template <bool kMost>
double OneScore(const Columns& c, const SummaryRequest& q, int i, bool allowed) {
  if (!q.gpu) return NodeScore<PodKind::kCpu, kMost, false>(c, q, i, allowed);
  if (q.whole) return NodeScore<PodKind::kWhole, kMost, true>(c, q, i, allowed);
  return q.by_percent ? NodeScore<PodKind::kShared, kMost, true>(c, q, i, allowed)
                      : NodeScore<PodKind::kShared, kMost, false>(c, q, i, allowed);
}

}  // namespace

SummaryRequest::SummaryRequest(const Pod& pod) {
  constexpr int64_t kLimit = NodeSummaries::kExactLimit;
  auto in_range = [](int64_t v, int64_t limit) { return v > -limit && v < limit; };
  exact = in_range(pod.cpu_milli, kLimit) && in_range(pod.memory_bytes, kLimit);
  cpu = Int32AtMost(pod.cpu_milli);
  memory = NodeSummaries::FloatAtMost(pod.memory_bytes);
  cpu_extra = static_cast<double>(pod.cpu_milli);
  memory_extra = static_cast<double>(pod.memory_bytes);
  const DeviceRequest* g = pod.Find(kGpu);
  if (g == nullptr) return;
  const PodDemand demand(pod);
  gpu = true;
  whole = g->whole();
  // Per-device figures below 2^40 times at most 1,024 devices keep every product exact.
  constexpr int64_t kDevice = int64_t{1} << 40;
  exact = exact && g->count >= 1 && g->count <= 1024 && in_range(demand.core, kDevice) &&
          in_range(demand.memory_bytes, kDevice);
  count = g->count;
  core = Int32AtMost(g->core);
  bytes = g->memory_ratio != 0 ? -1.0f : NodeSummaries::FloatAtMost(g->memory_bytes);
  core_extra = static_cast<double>(demand.core * demand.count);
  gpu_memory_extra = static_cast<double>(demand.memory_bytes * demand.count);
  by_percent = demand.memory_percent > 0;
  percent = static_cast<double>(demand.memory_percent);
  count_extra = static_cast<double>(demand.count);
  // percent * average below 2^53 (averages are below 2^40), and the memory added below 2^50.
  if (by_percent)
    exact = exact && demand.memory_percent <= 8192 &&
            demand.memory_percent * demand.count <= 100 * 1024;
}

bool ScanPathAvailable(ScanPath path) {
  switch (path) {
    case ScanPath::kPortable:
      return true;
#ifdef GPUFLEET_SCAN_X86
    case ScanPath::kAvx2:
      return HasAvx2();
    case ScanPath::kAvx512:
      return HasAvx512();
#else
    default:
      return false;
#endif
  }
  return false;
}

ScanPath FastestScanPath() {
  static const ScanPath fastest = ScanPathAvailable(ScanPath::kAvx512) ? ScanPath::kAvx512
                                  : ScanPathAvailable(ScanPath::kAvx2) ? ScanPath::kAvx2
                                                                       : ScanPath::kPortable;
  return fastest;
}

bool SummaryScan::ScoresAreExact(const ClusterState& state, const PlacementStrategy& strategy,
                                 const SummaryRequest& q) {
  return !strategy.ScoreNeedsPlan() && strategy.AllocationScoreSign() != 0 && q.exact &&
         state.summaries().oversized == 0;
}

SummaryScan::Result SummaryScan::ScoreAll(const ClusterState& state,
                                          const NodeAdmission& admission,
                                          const SummaryRequest& q, bool most, double* score,
                                          ScanPath path) {
  const NodeSummaries& m = state.summaries();
  if (!q.exact || m.oversized != 0) return {};
  if (!ScanPathAvailable(path)) path = ScanPath::kPortable;
  const int n = m.size();
  // Labels and taints, asked only of the nodes that have taints when the pod has no selector.
  const uint8_t* allowed = nullptr;  // every node admits the pod
  if (!admission.pod().node_selector.empty() || m.tainted != 0) {
    allowed_.resize(n);
    for (int i = 0; i < n; ++i) allowed_[i] = admission.Constraints(i);
    allowed = allowed_.data();
  }
  const Columns c(m);
  int best;
  if (!q.gpu)
    best = ScanWithSign<PodKind::kCpu, false>(path, most, c, q, allowed, n, score, &scratch_);
  else if (q.whole)
    best = ScanWithSign<PodKind::kWhole, true>(path, most, c, q, allowed, n, score, &scratch_);
  else if (q.by_percent)
    best = ScanWithSign<PodKind::kShared, true>(path, most, c, q, allowed, n, score, &scratch_);
  else
    best = ScanWithSign<PodKind::kShared, false>(path, most, c, q, allowed, n, score, &scratch_);
  return {true, best};
}

bool SummaryScan::ScoreOne(const ClusterState& state, const NodeAdmission& admission,
                           const SummaryRequest& q, bool most, int i, double* score) {
  const NodeSummaries& m = state.summaries();
  if (!q.exact || m.oversized_node[i]) return false;
  const Columns c(m);
  const bool allowed = admission.Constraints(i);
  *score = most ? OneScore<true>(c, q, i, allowed) : OneScore<false>(c, q, i, allowed);
  return true;
}

std::vector<absl::Span<const uint8_t>> SummaryScan::ColumnsRead(const NodeSummaries& m,
                                                                const SummaryRequest& q) {
  std::vector<absl::Span<const uint8_t>> out;
  auto add = [&](const auto& column) {
    out.emplace_back(reinterpret_cast<const uint8_t*>(column.data()),
                     column.size() * sizeof(column[0]));
  };
  add(m.free_cpu);
  add(m.free_memory);
  if (!q.gpu) {
    for (const auto* v : {&m.cpu_used, &m.cpu_capacity}) add(*v);
    for (const auto* v : {&m.memory_used, &m.memory_capacity}) add(*v);
    return out;
  }
  if (q.whole) {
    add(m.whole_free);
  } else {
    for (const auto* v : {&m.shared_gpus, &m.max_free_core}) add(*v);
    add(m.max_free_memory);
  }
  for (const auto* v : {&m.gpu_core_used, &m.gpu_core_capacity}) add(*v);
  for (const auto* v : {&m.gpu_memory_used, &m.gpu_memory_capacity}) add(*v);
  if (q.by_percent) add(m.gpu_memory_average);
  return out;
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
