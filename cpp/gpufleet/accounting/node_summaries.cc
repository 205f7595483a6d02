#include "gpufleet/accounting/node_summaries.h"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace gpufleet {
namespace {

template <typename V, typename F>
void ForEachColumn(V& s, F&& f) {
  for (auto* column : {&s.free_cpu, &s.free_memory, &s.free_pods, &s.whole_free, &s.shared_gpus,
                       &s.max_free_core, &s.max_free_memory, &s.cpu_used, &s.cpu_capacity,
                       &s.memory_used, &s.memory_capacity, &s.gpu_core_used, &s.gpu_core_capacity,
                       &s.gpu_memory_used, &s.gpu_memory_capacity})
    f(*column);
}

bool Oversized(const NodeUsage& u) {
  for (int64_t v : {u.cpu_capacity, u.memory_capacity, u.max_pods, u.gpu_core_capacity,
                    u.gpu_memory_capacity, u.gpu_memory_average, u.gpu_max_free_core,
                    u.gpu_max_free_memory})
    if (v >= NodeSummaries::kExactLimit || v <= -NodeSummaries::kExactLimit) return true;
  return false;
}

// Node i's column values from `u`, in ForEachColumn's order.
std::array<double, 15> ColumnValues(const NodeUsage& u) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  return {d(u.cpu_capacity - u.cpu_used),
          d(u.memory_capacity - u.memory_used),
          d(u.max_pods - u.pods_used),
          u.gpu_sharing == GpuSharing::kSharedOnly ? -1.0 : d(u.gpu_whole_free),
          u.gpu_sharing == GpuSharing::kWholeOnly ? -1.0 : d(u.gpu_count),
          d(u.gpu_max_free_core),
          d(u.gpu_max_free_memory),
          d(u.cpu_used),
          d(u.cpu_capacity),
          d(u.memory_used),
          d(u.memory_capacity),
          d(u.gpu_core_used),
          d(u.gpu_core_capacity),
          d(u.gpu_memory_used),
          d(u.gpu_memory_capacity)};
}

}  // namespace

void NodeSummaries::Append(const NodeUsage& u) {
  ForEachColumn(*this, [](std::vector<double>& c) { c.push_back(0.0); });
  gpu_memory_average.push_back(0);
  has_taints.push_back(0);
  oversized_node.push_back(0);
  Set(size() - 1, u);
}

void NodeSummaries::Set(int i, const NodeUsage& u) {
  tainted += int{u.has_taints} - has_taints[i];
  has_taints[i] = u.has_taints;
  const uint8_t big = Oversized(u);
  oversized += int{big} - oversized_node[i];
  oversized_node[i] = big;
  const std::array<double, 15> values = ColumnValues(u);
  size_t k = 0;
  ForEachColumn(*this, [&](std::vector<double>& c) { c[i] = values[k++]; });
  gpu_memory_average[i] = u.gpu_memory_average;
}

void NodeSummaries::Erase(int i) {
  tainted -= has_taints[i];
  oversized -= oversized_node[i];
  ForEachColumn(*this, [i](std::vector<double>& c) { c.erase(c.begin() + i); });
  gpu_memory_average.erase(gpu_memory_average.begin() + i);
  has_taints.erase(has_taints.begin() + i);
  oversized_node.erase(oversized_node.begin() + i);
}

bool NodeSummaries::Matches(int i, const NodeUsage& u) const {
  const std::array<double, 15> values = ColumnValues(u);
  size_t k = 0;
  bool same = true;
  ForEachColumn(*this, [&](const std::vector<double>& c) { same = same && c[i] == values[k++]; });
  return same && gpu_memory_average[i] == u.gpu_memory_average &&
         has_taints[i] == uint8_t{u.has_taints} && oversized_node[i] == uint8_t{Oversized(u)};
}

}  // namespace gpufleet
