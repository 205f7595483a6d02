// Every node's totals as structure-of-arrays, kept current by ClusterState on every mutation, so
// that a scan over thousands of nodes reads a few dense arrays instead of node objects. Values are
// doubles holding exact integers: a comparison with a request (rounded monotonically) gives the
// integer answer, and the scan's arithmetic (sums, then one division) gives exactly the doubles
// that NodeUsage's integers give. A node whose figures reach kExactLimit is counted in
// `oversized`, and scans that rely on exactness fall back to NodeUsage while any exists.
#ifndef GPUFLEET_ACCOUNTING_NODE_SUMMARIES_H_
#define GPUFLEET_ACCOUNTING_NODE_SUMMARIES_H_

#include <cstdint>
#include <vector>

#include "gpufleet/accounting/node_view.h"

namespace gpufleet {

struct NodeSummaries {
  // Far below 2^53, so sums of a few such values stay exact in a double.
  static constexpr int64_t kExactLimit = int64_t{1} << 50;

  // Feasibility: what is free. `whole_free` is -1 on a node that allows shared GPUs only, and
  // `shared_gpus` (healthy GPUs) -1 on one that allows whole GPUs only.
  std::vector<double> free_cpu, free_memory, free_pods;
  std::vector<double> whole_free, shared_gpus;
  std::vector<double> max_free_core, max_free_memory;
  // Scoring: what is used and what exists.
  std::vector<double> cpu_used, cpu_capacity, memory_used, memory_capacity;
  std::vector<double> gpu_core_used, gpu_core_capacity, gpu_memory_used, gpu_memory_capacity;
  std::vector<int64_t> gpu_memory_average;
  std::vector<uint8_t> has_taints, oversized_node;
  int tainted = 0;    // nodes with taints
  int oversized = 0;  // nodes with a figure at or above kExactLimit

  int size() const { return static_cast<int>(free_cpu.size()); }
  void Append(const NodeUsage& u);
  void Set(int i, const NodeUsage& u);
  void Erase(int i);
  // True when node i's entries are exactly what `u` gives.
  bool Matches(int i, const NodeUsage& u) const;
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_NODE_SUMMARIES_H_
