#include "gpufleet/accounting/node_summaries.h"

#include <cmath>
#include <initializer_list>
#include <limits>

namespace gpufleet {
namespace {

// Node i's entries, one field per column.
struct Row {
  int32_t free_cpu;
  float free_memory;
  int32_t whole_free, shared_gpus, max_free_core;
  float max_free_memory;
  int32_t cpu_used, cpu_capacity, gpu_core_used, gpu_core_capacity;
  double memory_used, memory_capacity, gpu_memory_used, gpu_memory_capacity, gpu_memory_average;
  uint8_t has_taints, oversized;
  bool operator==(const Row&) const = default;
};

// Every column, in Row's order; `f` takes (column, member of Row).
template <typename S, typename F>
void ForEachColumn(S& s, F&& f) {
  f(s.free_cpu, &Row::free_cpu);
  f(s.free_memory, &Row::free_memory);
  f(s.whole_free, &Row::whole_free);
  f(s.shared_gpus, &Row::shared_gpus);
  f(s.max_free_core, &Row::max_free_core);
  f(s.max_free_memory, &Row::max_free_memory);
  f(s.cpu_used, &Row::cpu_used);
  f(s.cpu_capacity, &Row::cpu_capacity);
  f(s.gpu_core_used, &Row::gpu_core_used);
  f(s.gpu_core_capacity, &Row::gpu_core_capacity);
  f(s.memory_used, &Row::memory_used);
  f(s.memory_capacity, &Row::memory_capacity);
  f(s.gpu_memory_used, &Row::gpu_memory_used);
  f(s.gpu_memory_capacity, &Row::gpu_memory_capacity);
  f(s.gpu_memory_average, &Row::gpu_memory_average);
  f(s.has_taints, &Row::has_taints);
  f(s.oversized_node, &Row::oversized);
}

bool Oversized(const NodeUsage& u) {
  auto past = [](int64_t v, int64_t limit) { return v >= limit || v <= -limit; };
  for (int64_t v : {u.cpu_capacity, u.cpu_used, u.gpu_core_capacity, u.gpu_core_used})
    if (past(v, NodeSummaries::kNarrowLimit)) return true;
  for (int64_t v : {u.memory_capacity, u.gpu_memory_capacity, u.gpu_max_free_memory})
    if (past(v, NodeSummaries::kExactLimit)) return true;
  return past(u.gpu_memory_average, NodeSummaries::kAverageLimit);
}

// A count for a feasibility column: saturated at the int32 range (rounding up past the top).
int32_t Saturated(int64_t v) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(v > kMax ? kMax : v < -kMax ? -kMax : v);
}

Row RowOf(const NodeUsage& u) {
  Row r;
  r.free_cpu = u.pods_used >= u.max_pods ? -1 : Saturated(u.cpu_capacity - u.cpu_used);
  r.free_memory = NodeSummaries::FloatAtLeast(u.memory_capacity - u.memory_used);
  r.whole_free = u.gpu_sharing == GpuSharing::kSharedOnly ? -1 : Saturated(u.gpu_whole_free);
  r.shared_gpus = u.gpu_sharing == GpuSharing::kWholeOnly ? -1 : Saturated(u.gpu_count);
  r.max_free_core = Saturated(u.gpu_max_free_core);
  r.max_free_memory = NodeSummaries::FloatAtLeast(u.gpu_max_free_memory);
  // Exact while the node is not oversized; the scans do not read them otherwise.
  r.cpu_used = Saturated(u.cpu_used);
  r.cpu_capacity = Saturated(u.cpu_capacity);
  r.gpu_core_used = Saturated(u.gpu_core_used);
  r.gpu_core_capacity = Saturated(u.gpu_core_capacity);
  auto d = [](int64_t v) { return static_cast<double>(v); };
  r.memory_used = d(u.memory_used);
  r.memory_capacity = d(u.memory_capacity);
  r.gpu_memory_used = d(u.gpu_memory_used);
  r.gpu_memory_capacity = d(u.gpu_memory_capacity);
  r.gpu_memory_average = d(u.gpu_memory_average);
  r.has_taints = u.has_taints;
  r.oversized = Oversized(u);
  return r;
}

}  // namespace

float NodeSummaries::FloatAtLeast(int64_t v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < static_cast<double>(v))
    f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

float NodeSummaries::FloatAtMost(int64_t v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > static_cast<double>(v))
    f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}

void NodeSummaries::Append(const NodeUsage& u) {
  ForEachColumn(*this, [](auto& column, auto) { column.emplace_back(); });
  Set(size() - 1, u);
}

void NodeSummaries::Set(int i, const NodeUsage& u) {
  const Row r = RowOf(u);
  tainted += int{r.has_taints} - has_taints[i];
  oversized += int{r.oversized} - oversized_node[i];
  ForEachColumn(*this, [&](auto& column, auto member) { column[i] = r.*member; });
}

void NodeSummaries::Erase(int i) {
  tainted -= has_taints[i];
  oversized -= oversized_node[i];
  ForEachColumn(*this, [i](auto& column, auto) { column.erase(column.begin() + i); });
}

bool NodeSummaries::Matches(int i, const NodeUsage& u) const {
  Row stored;
  ForEachColumn(*this, [&](const auto& column, auto member) { stored.*member = column[i]; });
  return stored == RowOf(u);
}

}  // namespace gpufleet
