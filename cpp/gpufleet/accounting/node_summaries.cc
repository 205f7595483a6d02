#include "gpufleet/accounting/node_summaries.h"

#include <algorithm>
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
  free_cpu[i] = static_cast<double>(u.cpu_capacity - u.cpu_used);
  free_memory[i] = static_cast<double>(u.memory_capacity - u.memory_used);
  free_pods[i] = static_cast<double>(u.max_pods - u.pods_used);
  whole_free[i] = u.gpu_sharing == GpuSharing::kSharedOnly ? -1.0 : u.gpu_whole_free;
  shared_gpus[i] = u.gpu_sharing == GpuSharing::kWholeOnly ? -1.0 : u.gpu_count;
  max_free_core[i] = static_cast<double>(u.gpu_max_free_core);
  max_free_memory[i] = static_cast<double>(u.gpu_max_free_memory);
  cpu_used[i] = static_cast<double>(u.cpu_used);
  cpu_capacity[i] = static_cast<double>(u.cpu_capacity);
  memory_used[i] = static_cast<double>(u.memory_used);
  memory_capacity[i] = static_cast<double>(u.memory_capacity);
  gpu_core_used[i] = static_cast<double>(u.gpu_core_used);
  gpu_core_capacity[i] = static_cast<double>(u.gpu_core_capacity);
  gpu_memory_used[i] = static_cast<double>(u.gpu_memory_used);
  gpu_memory_capacity[i] = static_cast<double>(u.gpu_memory_capacity);
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
  NodeSummaries one;
  one.Append(u);
  bool same = true;
  int column = 0;
  std::vector<const std::vector<double>*> mine;
  ForEachColumn(*this, [&](const std::vector<double>& c) { mine.push_back(&c); });
  ForEachColumn(one, [&](const std::vector<double>& c) {
    same = same && (*mine[column++])[i] == c[0];
  });
  return same && gpu_memory_average[i] == one.gpu_memory_average[0] &&
         has_taints[i] == one.has_taints[0] && oversized_node[i] == one.oversized_node[0];
}

}  // namespace gpufleet
