// The cluster's accounting: nodes, per-device used core/memory, and every pod's allocation.
// Filter answers per device, never from node totals alone; Reserve/Unreserve/Commit/Release move
// usage; no mutation can over-commit a device (CheckInvariants verifies it), and a failed
// mutation leaves the state as it was. One ClusterState serves the engine, the simulator and the
// Kubernetes adapters. Const methods change nothing (no caches, no refreshes), so any number of
// threads may call them at once while no thread calls a non-const one; GuardedCluster enforces
// exactly that with its lock.
#ifndef GPUFLEET_ACCOUNTING_CLUSTER_STATE_H_
#define GPUFLEET_ACCOUNTING_CLUSTER_STATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/change_log.h"
#include "gpufleet/accounting/fit.h"
#include "gpufleet/accounting/node_summaries.h"
#include "gpufleet/accounting/node_view.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/pod.h"

namespace gpufleet {

// A growable int64 buffer whose storage can outlive a resize: views handed out (NumPy arrays)
// keep the old block alive instead of dangling. Copies are deep.
class SharedBuffer {
 public:
  SharedBuffer() : data_(std::make_shared<std::vector<int64_t>>()) {}
  SharedBuffer(const SharedBuffer& other)
      : data_(std::make_shared<std::vector<int64_t>>(*other.data_)) {}
  SharedBuffer& operator=(const SharedBuffer& other) {
    if (this != &other) data_ = std::make_shared<std::vector<int64_t>>(*other.data_);
    return *this;
  }
  SharedBuffer(SharedBuffer&&) = default;
  SharedBuffer& operator=(SharedBuffer&&) = default;

  int64_t& operator[](size_t i) { return (*data_)[i]; }
  int64_t operator[](size_t i) const { return (*data_)[i]; }
  size_t size() const { return data_->size(); }
  int64_t* data() { return data_->data(); }
  const int64_t* data() const { return data_->data(); }
  void Append(int64_t v);
  void Erase(size_t begin, size_t end);
  const std::shared_ptr<std::vector<int64_t>>& storage() const { return data_; }

 private:
  std::shared_ptr<std::vector<int64_t>> data_;
};

class ClusterState {
 public:
  // --- Nodes -----------------------------------------------------------------------------------
  absl::Status AddNode(const Node& node);           // AlreadyExists / InvalidArgument
  absl::Status RemoveNode(const std::string& name);  // FailedPrecondition while pods hold it
  absl::Status SetDeviceHealth(const std::string& node, const std::string& type, int minor,
                               bool healthy);
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_devices() const { return static_cast<int>(device_node_.size()); }
  const Node& node(int i) const { return nodes_[i]; }
  const NodeUsage& usage(int i) const { return usage_[i]; }
  int FindNode(absl::string_view name) const;  // -1 when absent
  NodeView View(int i) const;
  int first_device(int i) const { return first_device_[i]; }

  // --- Questions -------------------------------------------------------------------------------
  // Resources and devices only; label/taint constraints are FitsNodeConstraints below. Hosts ask
  // placement/node_admission.h (AdmitNode), which checks both; node choice (plans, scores,
  // Place) is placement's: placement/placer.h.
  FitResult Filter(const Pod& pod, int node) const;
  // Filter's first part: pod count, cpu and memory, with the same reasons in the same order.
  FitResult FilterTotals(const Pod& pod, int node) const;

  // --- Transactions ----------------------------------------------------------------------------
  // Applies a planned allocation as reserved. Rejects unknown nodes/devices, duplicate pods and
  // anything that would over-commit, leaving the state unchanged.
  absl::Status Reserve(const Allocation& allocation);
  absl::Status Unreserve(const std::string& pod);  // idempotent; a bound pod is not touched
  absl::Status Commit(const std::string& pod);     // reserved -> bound
  absl::Status Release(const std::string& pod);    // frees a reserved or bound pod; NotFound
  const Allocation* FindAllocation(const std::string& pod) const;
  std::vector<const Allocation*> Allocations() const;  // sorted by pod name
  int num_allocations() const { return static_cast<int>(allocations_.size()); }

  // Stamped on every change to the node (usage, health) from one process-wide counter, so a stamp
  // names one state of one node: equal stamps mean equal nodes, even across copies of a state
  // (a copy shares its original's stamps until either changes). Never 0.
  uint64_t node_version(int i) const { return node_version_[i]; }
  const uint64_t* node_versions() const { return node_version_.data(); }
  // The nodes whose version changed, in order (a copy of the state starts its own log). Commit
  // records its node too, without a new version (its usage stays; its allocations' state moves).
  const ChangeLog& changes() const { return changes_; }
  // The nodes changed since a reader stopped at `position` of the log `log_id` (changes()), each
  // once, in the order of its first change; nullopt when that position is not in the current log
  // (another log, entries dropped, or a node removed): the reader must then read every node.
  std::optional<std::vector<int>> NodesChangedSince(uint64_t log_id, uint64_t position) const;
  // Every node's totals as dense arrays, for scans over many nodes.
  const NodeSummaries& summaries() const { return summaries_; }

  // --- Checks ----------------------------------------------------------------------------------
  // Every device's used <= capacity, usage equals the sum of allocations, summaries are current.
  absl::Status CheckInvariants() const;
  bool operator==(const ClusterState& other) const;

  // --- Raw arrays (for zero-copy NumPy views) --------------------------------------------------
  const SharedBuffer& used_core() const { return used_core_; }
  const SharedBuffer& used_memory() const { return used_memory_; }
  const std::vector<int32_t>& device_node() const { return device_node_; }
  const std::vector<int64_t>& capacity_core() const { return capacity_core_; }
  const std::vector<int64_t>& capacity_memory() const { return capacity_memory_; }
  const std::vector<uint8_t>& healthy_gpu() const { return healthy_gpu_; }
  // Per device: 1 per VF a pod holds, 0 per free VF (flat order, core/rdma_vf.h).
  const std::vector<std::vector<uint8_t>>& vf_taken() const { return vf_taken_; }
  // Whether any device of the node carries VFs: nodes without them (most) skip every VF check.
  bool has_vf_nics(int node) const { return has_vf_nics_[node] != 0; }

  // Current time source for assume times; tests and the simulator may pin it.
  void set_clock(std::function<int64_t()> clock) { clock_ = std::move(clock); }

 private:
  void RefreshUsage(int node);  // recomputes the summaries and stamps a new version
  void RecordChange(int node);  // notes the node in changes_
  NodeUsage SummaryOf(int node) const;        // the node's summary from its devices' usage
  absl::Status ApplyDelta(const Allocation& a, int sign, bool check_only) const;
  void Apply(const Allocation& a, int sign);
  absl::Status CheckVfGrants(int node, const Allocation& a) const;
  int LocalDevice(int node, const std::string& type, int minor) const;

  std::vector<Node> nodes_;
  std::vector<NodeUsage> usage_;
  std::vector<int> first_device_;
  absl::flat_hash_map<std::string, int> node_index_;
  std::vector<int32_t> device_node_;
  SharedBuffer used_core_;
  SharedBuffer used_memory_;
  std::vector<int64_t> capacity_core_;
  std::vector<int64_t> capacity_memory_;
  std::vector<uint8_t> healthy_gpu_;  // 1 for a healthy GPU, 0 for anything else
  std::vector<std::vector<uint8_t>> vf_taken_;  // per device, per VF: held by a pod
  std::vector<uint8_t> has_vf_nics_;             // per node
  std::vector<uint64_t> node_version_;
  ChangeLog changes_;
  NodeSummaries summaries_;
  absl::flat_hash_map<std::string, Allocation> allocations_;
  std::function<int64_t()> clock_;
};

// Node selector and taints/tolerations (NoSchedule and NoExecute taints must be tolerated).
FitResult FitsNodeConstraints(const Pod& pod, const Node& node);

// Bytes a request takes on a device: memory_bytes, or memory_ratio percent of the device's memory.
int64_t RequestBytesOn(const DeviceRequest& request, const Device& device);

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_CLUSTER_STATE_H_
