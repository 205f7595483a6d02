#include "gpufleet/accounting/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/accounting/node_constraints.h"
#include "gpufleet/core/rdma_vf.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet {

void SharedBuffer::Append(int64_t v) {
  if (data_->size() == data_->capacity()) {
    // Grow into a fresh block so views of the old one stay valid (they keep it alive).
    auto grown = std::make_shared<std::vector<int64_t>>();
    grown->reserve(std::max<size_t>(16, data_->capacity() * 2));
    grown->assign(data_->begin(), data_->end());
    data_ = std::move(grown);
  }
  data_->push_back(v);
}

void SharedBuffer::Erase(size_t begin, size_t end) {
  auto fresh = std::make_shared<std::vector<int64_t>>(*data_);
  fresh->erase(fresh->begin() + begin, fresh->begin() + end);
  data_ = std::move(fresh);
}

int ClusterState::FindNode(absl::string_view name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

NodeView ClusterState::View(int i) const {
  NodeView v;
  v.node = &nodes_[i];
  v.usage = &usage_[i];
  v.used_core = used_core_.data() + first_device_[i];
  v.used_memory = used_memory_.data() + first_device_[i];
  // Left null on nodes without VF NICs, so the per-device VF checks stop at one pointer test.
  if (has_vf_nics_[i]) v.vf_taken = vf_taken_.data() + first_device_[i];
  return v;
}

absl::Status ClusterState::AddNode(const Node& node) {
  RETURN_IF_ERROR(ValidateNode(node));
  if (node_index_.count(node.name))
    return absl::AlreadyExistsError(absl::StrFormat("node %s already exists", node.name));
  int index = num_nodes();
  nodes_.push_back(node);
  first_device_.push_back(num_devices());
  bool vf_nics = false;
  for (const Device& d : node.devices) {
    device_node_.push_back(index);
    used_core_.Append(0);
    used_memory_.Append(0);
    capacity_core_.push_back(d.core);
    capacity_memory_.push_back(d.memory_bytes);
    healthy_gpu_.push_back(d.type == kGpu && d.healthy);
    vf_taken_.emplace_back(VfCount(d), 0);
    vf_nics = vf_nics || VfCount(d) > 0;
  }
  has_vf_nics_.push_back(vf_nics);
  usage_.emplace_back();
  summaries_.Append(usage_.back());
  node_version_.push_back(0);
  node_index_[node.name] = index;
  RefreshUsage(index);
  return absl::OkStatus();
}

absl::Status ClusterState::RemoveNode(const std::string& name) {
  int index = FindNode(name);
  if (index < 0) return absl::NotFoundError(absl::StrFormat("node %s does not exist", name));
  for (const auto& [pod, a] : allocations_) {
    if (a.node == name)
      return absl::FailedPreconditionError(
          absl::StrFormat("node %s still holds pod %s; release it first", name, pod));
  }
  size_t begin = first_device_[index];
  size_t end = begin + nodes_[index].devices.size();
  used_core_.Erase(begin, end);
  used_memory_.Erase(begin, end);
  device_node_.erase(device_node_.begin() + begin, device_node_.begin() + end);
  capacity_core_.erase(capacity_core_.begin() + begin, capacity_core_.begin() + end);
  capacity_memory_.erase(capacity_memory_.begin() + begin, capacity_memory_.begin() + end);
  healthy_gpu_.erase(healthy_gpu_.begin() + begin, healthy_gpu_.begin() + end);
  vf_taken_.erase(vf_taken_.begin() + begin, vf_taken_.begin() + end);
  for (auto& n : device_node_)
    if (n > index) --n;
  nodes_.erase(nodes_.begin() + index);
  has_vf_nics_.erase(has_vf_nics_.begin() + index);
  usage_.erase(usage_.begin() + index);
  summaries_.Erase(index);
  node_version_.erase(node_version_.begin() + index);
  changes_.Restart();
  first_device_.erase(first_device_.begin() + index);
  for (size_t i = index; i < first_device_.size(); ++i) first_device_[i] -= (end - begin);
  node_index_.erase(name);
  for (size_t i = index; i < nodes_.size(); ++i) node_index_[nodes_[i].name] = i;
  return absl::OkStatus();
}

int ClusterState::LocalDevice(int node, const std::string& type, int minor) const {
  const auto& devices = nodes_[node].devices;
  for (size_t d = 0; d < devices.size(); ++d)
    if (devices[d].minor == minor && devices[d].type == type) return static_cast<int>(d);
  return -1;
}

absl::Status ClusterState::SetDeviceHealth(const std::string& node, const std::string& type,
                                           int minor, bool healthy) {
  int index = FindNode(node);
  if (index < 0) return absl::NotFoundError(absl::StrFormat("node %s does not exist", node));
  int d = LocalDevice(index, type, minor);
  if (d < 0)
    return absl::NotFoundError(
        absl::StrFormat("node %s has no %s device with minor %d", node, type, minor));
  nodes_[index].devices[d].healthy = healthy;
  healthy_gpu_[first_device_[index] + d] = type == kGpu && healthy;
  RefreshUsage(index);
  return absl::OkStatus();
}

namespace {
std::atomic<uint64_t> node_stamps{0};
}  // namespace

void ClusterState::RefreshUsage(int i) {
  node_version_[i] = node_stamps.fetch_add(1, std::memory_order_relaxed) + 1;
  RecordChange(i);
  usage_[i] = SummaryOf(i);
  summaries_.Set(i, usage_[i]);
}

void ClusterState::RecordChange(int i) {
  // Bounded by a few passes' worth of entries: a reader further behind compares versions.
  changes_.Record(i, 4 * nodes_.size() + 1024);
}

std::optional<std::vector<int>> ClusterState::NodesChangedSince(uint64_t log_id,
                                                                uint64_t position) const {
  if (log_id != changes_.id() || position < changes_.begin() || position > changes_.end())
    return std::nullopt;
  std::vector<int> out;
  if (position == changes_.end()) return out;
  std::vector<uint8_t> named(nodes_.size(), 0);
  for (uint64_t p = position; p < changes_.end(); ++p) {
    const int node = changes_.at(p);
    if (named[node]) continue;
    named[node] = 1;
    out.push_back(node);
  }
  return out;
}

NodeUsage ClusterState::SummaryOf(int i) const {
  const Node& n = nodes_[i];
  NodeUsage u;
  u.cpu_used = usage_[i].cpu_used;
  u.memory_used = usage_[i].memory_used;
  u.pods_used = usage_[i].pods_used;
  u.cpu_capacity = n.cpu_milli;
  u.memory_capacity = n.memory_bytes;
  u.max_pods = n.max_pods;
  u.has_taints = !n.taints.empty();
  u.has_nvlink = !n.nvlink_groups.empty();
  u.gpu_sharing = n.gpu_sharing;
  u.num_devices = static_cast<int32_t>(n.devices.size());
  // Summed in locals and stored once: this runs on every reserve and release.
  NodeView v = View(i);
  bool other_devices = false;
  int32_t count = 0, whole_free = 0;
  int64_t min_core = 0, min_memory = 0, core_capacity = 0, core_used = 0, memory_capacity = 0,
          memory_used = 0, max_free_core = 0, max_free_memory = 0;
  for (int d = 0; d < v.num_devices(); ++d) {
    const Device& dev = v.device(d);
    const bool gpu = std::string_view(dev.type) == kGpu;  // fixed length: compared inline
    if (!gpu) other_devices = true;
    if (!gpu || !dev.healthy) continue;
    min_core = count == 0 ? dev.core : std::min(min_core, dev.core);
    min_memory = count == 0 ? dev.memory_bytes : std::min(min_memory, dev.memory_bytes);
    ++count;
    if (v.untouched(d)) ++whole_free;
    core_capacity += dev.core;
    core_used += v.used_core[d];
    memory_capacity += dev.memory_bytes;
    memory_used += v.used_memory[d];
    max_free_core = std::max(max_free_core, v.free_core(d));
    max_free_memory = std::max(max_free_memory, v.free_memory(d));
  }
  u.has_other_devices = other_devices;
  u.gpu_count = count;
  u.gpu_whole_free = whole_free;
  u.gpu_min_core_capacity = min_core;
  u.gpu_min_memory_capacity = min_memory;
  u.gpu_core_capacity = core_capacity;
  u.gpu_core_used = core_used;
  u.gpu_memory_capacity = memory_capacity;
  u.gpu_memory_used = memory_used;
  u.gpu_max_free_core = max_free_core;
  u.gpu_max_free_memory = max_free_memory;
  if (count > 0) u.gpu_memory_average = memory_capacity / count;
  return u;
}

FitResult ClusterState::FilterTotals(const Pod& pod, int node) const {
  const Node& n = nodes_[node];
  const NodeUsage& u = usage_[node];
  if (u.pods_used + 1 > n.max_pods) return FitResult::Unschedulable("Too many pods");
  if (pod.cpu_milli > n.cpu_milli)
    return FitResult::Unresolvable("Insufficient cpu (more than the node has)");
  if (pod.memory_bytes > n.memory_bytes)
    return FitResult::Unresolvable("Insufficient memory (more than the node has)");
  if (pod.cpu_milli > n.cpu_milli - u.cpu_used) return FitResult::Unschedulable("Insufficient cpu");
  if (pod.memory_bytes > n.memory_bytes - u.memory_used)
    return FitResult::Unschedulable("Insufficient memory");
  return FitResult::Ok();
}

FitResult ClusterState::Filter(const Pod& pod, int node) const {
  // QuickMayFit without devices says yes exactly when FilterTotals does; its reason only on a no.
  if (!QuickMayFit(pod, nullptr, usage_[node])) return FilterTotals(pod, node);
  NodeView view = View(node);
  for (const DeviceRequest& r : pod.devices) {
    FitResult fit = FitDeviceRequest(view, pod, r, /*domains=*/nullptr);
    if (!fit.ok()) return fit;
  }
  return FitResult::Ok();
}

absl::Status ClusterState::ApplyDelta(const Allocation& a, int sign, bool check_only) const {
  int node = FindNode(a.node);
  if (node < 0) return absl::NotFoundError(absl::StrFormat("node %s does not exist", a.node));
  const Node& n = nodes_[node];
  const NodeUsage& u = usage_[node];
  if (a.cpu_milli < 0 || a.memory_bytes < 0)
    return absl::InvalidArgumentError(absl::StrFormat("pod %s: negative cpu or memory", a.pod));
  if (sign > 0) {
    if (u.pods_used + 1 > n.max_pods)
      return absl::FailedPreconditionError(absl::StrFormat("node %s: too many pods", a.node));
    // Compared against what is free, so huge requests cannot overflow the sum.
    if (a.cpu_milli > n.cpu_milli - u.cpu_used)
      return absl::FailedPreconditionError(
          absl::StrFormat("node %s: pod %s would over-commit cpu", a.node, a.pod));
    if (a.memory_bytes > n.memory_bytes - u.memory_used)
      return absl::FailedPreconditionError(
          absl::StrFormat("node %s: pod %s would over-commit memory", a.node, a.pod));
  }
  // One allocation may name a device once only (grants are few: a quadratic check is cheapest).
  for (size_t k = 0; k < a.devices.size(); ++k) {
    const DeviceGrant& g = a.devices[k];
    int d = LocalDevice(node, g.type, g.minor);
    if (d < 0)
      return absl::NotFoundError(
          absl::StrFormat("node %s has no %s device with minor %d", a.node, g.type, g.minor));
    if (g.core < 0 || g.memory_bytes < 0)
      return absl::InvalidArgumentError(
          absl::StrFormat("pod %s: negative grant on %s %d", a.pod, g.type, g.minor));
    for (size_t e = 0; e < k; ++e)
      if (a.devices[e].minor == g.minor && a.devices[e].type == g.type)
        return absl::InvalidArgumentError(
            absl::StrFormat("pod %s names %s %d twice", a.pod, g.type, g.minor));
  }
  if (sign > 0) RETURN_IF_ERROR(CheckVfGrants(node, a));
  if (sign > 0) {
    NodeView v = View(node);
    for (const DeviceGrant& g : a.devices) {
      const int d = LocalDevice(node, g.type, g.minor);
      const std::pair<int64_t, int64_t> grant(g.core, g.memory_bytes);
      if (grant.first > v.free_core(d) || grant.second > v.free_memory(d))
        return absl::FailedPreconditionError(absl::StrFormat(
            "node %s: pod %s would over-commit %s %d (free core %d, memory %d; asks %d, %d)",
            a.node, a.pod, n.devices[d].type, n.devices[d].minor, v.free_core(d),
            v.free_memory(d), grant.first, grant.second));
    }
  }
  (void)check_only;
  return absl::OkStatus();
}

// Every VF named exists on its NIC (same minor and bus id), is free, and is named once.
absl::Status ClusterState::CheckVfGrants(int node, const Allocation& a) const {
  for (size_t k = 0; k < a.devices.size(); ++k) {
    const DeviceGrant& g = a.devices[k];
    if (g.vfs.empty()) continue;
    const int d = LocalDevice(node, g.type, g.minor);
    const Device& dev = nodes_[node].devices[d];
    for (size_t f = 0; f < g.vfs.size(); ++f) {
      const VirtualFunction& vf = g.vfs[f];
      const int at = FindVf(dev, vf);
      if (at < 0)
        return absl::NotFoundError(absl::StrFormat(
            "node %s: %s %d has no virtual function with minor %d and busID \"%s\"", a.node,
            g.type, g.minor, vf.minor, vf.bus_id));
      if (vf_taken_[first_device_[node] + d][at])
        return absl::FailedPreconditionError(absl::StrFormat(
            "node %s: pod %s: virtual function %s (minor %d) of %s %d is held by another pod",
            a.node, a.pod, vf.bus_id, vf.minor, g.type, g.minor));
      for (size_t e = 0; e < f; ++e)
        if (g.vfs[e] == vf)
          return absl::InvalidArgumentError(absl::StrFormat(
              "pod %s names virtual function %s of %s %d twice", a.pod, vf.bus_id, g.type,
              g.minor));
    }
  }
  return absl::OkStatus();
}

void ClusterState::Apply(const Allocation& a, int sign) {
  int node = FindNode(a.node);
  NodeUsage& u = usage_[node];
  u.cpu_used += sign * a.cpu_milli;
  u.memory_used += sign * a.memory_bytes;
  u.pods_used += sign;
  int base = first_device_[node];
  for (const DeviceGrant& g : a.devices) {
    int d = LocalDevice(node, g.type, g.minor);
    used_core_[base + d] += sign * g.core;
    used_memory_[base + d] += sign * g.memory_bytes;
    for (const VirtualFunction& vf : g.vfs)
      vf_taken_[base + d][FindVf(nodes_[node].devices[d], vf)] = sign > 0;
  }
  RefreshUsage(node);
}

absl::Status ClusterState::Reserve(const Allocation& allocation) {
  if (allocation.pod.empty()) return absl::InvalidArgumentError("allocation has no pod name");
  if (allocations_.count(allocation.pod))
    return absl::AlreadyExistsError(
        absl::StrFormat("pod %s already holds an allocation", allocation.pod));
  RETURN_IF_ERROR(ApplyDelta(allocation, +1, /*check_only=*/true));
  Allocation a = allocation;
  a.state = AllocationState::kReserved;
  if (a.assume_time_ns == 0)
    a.assume_time_ns = clock_ ? clock_()
                              : std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
  Apply(a, +1);
  allocations_.emplace(a.pod, std::move(a));
  return absl::OkStatus();
}

absl::Status ClusterState::Unreserve(const std::string& pod) {
  auto it = allocations_.find(pod);
  if (it == allocations_.end()) return absl::OkStatus();
  if (it->second.state == AllocationState::kBound)
    return absl::FailedPreconditionError(
        absl::StrFormat("pod %s is bound; release it instead of unreserving", pod));
  Apply(it->second, -1);
  allocations_.erase(it);
  return absl::OkStatus();
}

absl::Status ClusterState::Commit(const std::string& pod) {
  auto it = allocations_.find(pod);
  if (it == allocations_.end())
    return absl::NotFoundError(absl::StrFormat("pod %s has no reservation to commit", pod));
  it->second.state = AllocationState::kBound;
  RecordChange(FindNode(it->second.node));
  return absl::OkStatus();
}

absl::Status ClusterState::Release(const std::string& pod) {
  auto it = allocations_.find(pod);
  if (it == allocations_.end())
    return absl::NotFoundError(absl::StrFormat("pod %s holds no allocation", pod));
  Apply(it->second, -1);
  allocations_.erase(it);
  return absl::OkStatus();
}

const Allocation* ClusterState::FindAllocation(const std::string& pod) const {
  auto it = allocations_.find(pod);
  return it == allocations_.end() ? nullptr : &it->second;
}

std::vector<const Allocation*> ClusterState::Allocations() const {
  std::vector<const Allocation*> out;
  out.reserve(allocations_.size());
  for (const auto& [name, a] : allocations_) out.push_back(&a);
  std::sort(out.begin(), out.end(),
            [](const Allocation* a, const Allocation* b) { return a->pod < b->pod; });
  return out;
}

absl::Status ClusterState::CheckInvariants() const {
  std::vector<int64_t> core(num_devices(), 0), memory(num_devices(), 0);
  std::vector<std::vector<uint8_t>> vfs(num_devices());
  for (int d = 0; d < num_devices(); ++d) vfs[d].assign(vf_taken_[d].size(), 0);
  std::vector<NodeUsage> expect(num_nodes());
  for (const auto& [name, a] : allocations_) {
    int node = FindNode(a.node);
    if (node < 0) return absl::InternalError(absl::StrCat("pod ", name, " on unknown node"));
    expect[node].cpu_used += a.cpu_milli;
    expect[node].memory_used += a.memory_bytes;
    expect[node].pods_used += 1;
    for (const DeviceGrant& g : a.devices) {
      int d = LocalDevice(node, g.type, g.minor);
      if (d < 0) return absl::InternalError(absl::StrCat("pod ", name, " holds unknown device"));
      core[first_device_[node] + d] += g.core;
      memory[first_device_[node] + d] += g.memory_bytes;
      for (const VirtualFunction& vf : g.vfs) {
        const int at = FindVf(nodes_[node].devices[d], vf);
        if (at < 0 || vfs[first_device_[node] + d][at]++)
          return absl::InternalError(absl::StrCat("pod ", name, " holds an unknown or shared VF"));
      }
    }
  }
  if (vfs != vf_taken_) return absl::InternalError("held virtual functions differ from allocations");
  for (int i = 0; i < num_nodes(); ++i) {
    const Node& n = nodes_[i];
    const NodeUsage& u = usage_[i];
    if (u.cpu_used != expect[i].cpu_used || u.memory_used != expect[i].memory_used ||
        u.pods_used != expect[i].pods_used)
      return absl::InternalError(absl::StrCat("node ", n.name, ": usage differs from allocations"));
    if (u.cpu_used > n.cpu_milli || u.memory_used > n.memory_bytes || u.pods_used > n.max_pods)
      return absl::InternalError(absl::StrCat("node ", n.name, " is over-committed"));
    for (size_t d = 0; d < n.devices.size(); ++d) {
      int g = first_device_[i] + d;
      if (used_core_[g] != core[g] || used_memory_[g] != memory[g])
        return absl::InternalError(absl::StrFormat("node %s %s %d: usage differs from allocations",
                                                   n.name, n.devices[d].type, n.devices[d].minor));
      if (used_core_[g] > n.devices[d].core || used_memory_[g] > n.devices[d].memory_bytes ||
          used_core_[g] < 0 || used_memory_[g] < 0)
        return absl::InternalError(absl::StrFormat("node %s %s %d is over-committed", n.name,
                                                   n.devices[d].type, n.devices[d].minor));
    }
    // Recomputed aside, never written back: a check changes nothing (readers run it in parallel).
    const NodeUsage now = SummaryOf(i);
    if (now.gpu_whole_free != u.gpu_whole_free || now.gpu_core_used != u.gpu_core_used ||
        now.gpu_max_free_memory != u.gpu_max_free_memory)
      return absl::InternalError(absl::StrCat("node ", n.name, ": stale usage summary"));
    if (!summaries_.Matches(i, u))
      return absl::InternalError(absl::StrCat("node ", n.name, ": stale node summaries"));
  }
  return absl::OkStatus();
}

bool ClusterState::operator==(const ClusterState& other) const {
  if (nodes_ != other.nodes_) return false;
  for (int i = 0; i < num_devices(); ++i)
    if (used_core_[i] != other.used_core_[i] || used_memory_[i] != other.used_memory_[i])
      return false;
  if (vf_taken_ != other.vf_taken_) return false;
  if (allocations_.size() != other.allocations_.size()) return false;
  for (const auto& [name, a] : allocations_) {
    const Allocation* b = other.FindAllocation(name);
    if (b == nullptr || !(a == *b)) return false;
  }
  return true;
}

FitResult FitsNodeConstraints(const Pod& pod, const Node& node) {
  FitResult selector = MatchesNodeSelector(pod, node);
  if (!selector.ok()) return selector;
  return ToleratesTaints(pod, node);
}

int64_t RequestBytesOn(const DeviceRequest& request, const Device& device) {
  if (request.memory_ratio > 0)
    return (request.memory_ratio * device.memory_bytes + 99) / 100;
  return request.memory_bytes;
}

}  // namespace gpufleet
