// Every node's totals as structure-of-arrays, kept current by ClusterState on every mutation, so
// that a scan over thousands of nodes reads a few dense, narrow arrays instead of node objects.
//
// Two kinds of column. Feasibility columns (what is free) are a necessary condition only: free
// bytes are rounded up to a float (counts and milli-cpu are exact int32), so a node they rule out
// certainly does not fit, and a node they let through is checked exactly afterwards (NodeUsage,
// then the devices). Score columns (used and capacity) are exact: int32 where the
// value is a count or percent below 2^31, doubles holding exact integers otherwise, so the scan's
// arithmetic (sums, then one division) gives exactly the doubles NodeUsage's integers give. A
// node whose figures pass those limits is counted in `oversized`, and scans that rely on
// exactness fall back to NodeUsage while any exists.
#ifndef GPUFLEET_ACCOUNTING_NODE_SUMMARIES_H_
#define GPUFLEET_ACCOUNTING_NODE_SUMMARIES_H_

#include <cstdint>
#include <vector>

#include "gpufleet/accounting/node_view.h"

namespace gpufleet {

struct NodeSummaries {
  // Far below 2^53, so sums of a few such values stay exact in a double.
  static constexpr int64_t kExactLimit = int64_t{1} << 50;
  // Average GPU memory below this (1 TiB), so a pod's memory in percent of it, times its GPU
  // count, stays below kExactLimit (summary_scan.h bounds the percent and count).
  static constexpr int64_t kAverageLimit = int64_t{1} << 40;
  // int32 score columns.
  static constexpr int64_t kNarrowLimit = int64_t{1} << 31;

  // Feasibility (rounded toward admitting). `free_cpu` is -1 on a node with no free pod slot, so
  // the cpu check also checks the pod count. `whole_free` is -1 on a node that allows shared GPUs
  // only, and `shared_gpus` (healthy GPUs) -1 on one that allows whole GPUs only.
  std::vector<int32_t> free_cpu;
  std::vector<float> free_memory;
  std::vector<int32_t> whole_free, shared_gpus, max_free_core;
  std::vector<float> max_free_memory;
  // Scoring (exact): what is used and what exists.
  std::vector<int32_t> cpu_used, cpu_capacity, gpu_core_used, gpu_core_capacity;
  std::vector<double> memory_used, memory_capacity;
  std::vector<double> gpu_memory_used, gpu_memory_capacity, gpu_memory_average;
  std::vector<uint8_t> has_taints, oversized_node;
  int tainted = 0;    // nodes with taints
  int oversized = 0;  // nodes with a figure past the limits above

  int size() const { return static_cast<int>(free_cpu.size()); }
  void Append(const NodeUsage& u);
  void Set(int i, const NodeUsage& u);
  void Erase(int i);
  // True when node i's entries are exactly what `u` gives.
  bool Matches(int i, const NodeUsage& u) const;

  // `v` as a float no smaller (a free amount) or no larger (a request) than `v`.
  static float FloatAtLeast(int64_t v);
  static float FloatAtMost(int64_t v);
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_NODE_SUMMARIES_H_
