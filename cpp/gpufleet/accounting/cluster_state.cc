#include "gpufleet/accounting/cluster_state.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/placement/node_score.h"
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

int ClusterState::FindNode(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

NodeView ClusterState::View(int i) const {
  NodeView v;
  v.node = &nodes_[i];
  v.usage = &usage_[i];
  v.used_core = used_core_.data() + first_device_[i];
  v.used_memory = used_memory_.data() + first_device_[i];
  return v;
}

absl::Status ClusterState::AddNode(const Node& node) {
  RETURN_IF_ERROR(ValidateNode(node));
  if (node_index_.count(node.name))
    return absl::AlreadyExistsError(absl::StrFormat("node %s already exists", node.name));
  int index = num_nodes();
  nodes_.push_back(node);
  first_device_.push_back(num_devices());
  for (const Device& d : node.devices) {
    device_node_.push_back(index);
    used_core_.Append(0);
    used_memory_.Append(0);
    capacity_core_.push_back(d.core);
    capacity_memory_.push_back(d.memory_bytes);
    healthy_gpu_.push_back(d.type == kGpu && d.healthy);
  }
  usage_.emplace_back();
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
  for (auto& n : device_node_)
    if (n > index) --n;
  nodes_.erase(nodes_.begin() + index);
  usage_.erase(usage_.begin() + index);
  node_version_.erase(node_version_.begin() + index);
  score_cache_.Clear();
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

void ClusterState::RefreshUsage(int i) {
  node_version_[i] = ++version_counter_;
  usage_[i] = SummaryOf(i);
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
  NodeView v = View(i);
  for (int d = 0; d < v.num_devices(); ++d) {
    const Device& dev = v.device(d);
    if (dev.type != kGpu) u.has_other_devices = true;
    if (dev.type != kGpu || !dev.healthy) continue;
    u.gpu_min_core_capacity =
        u.gpu_count == 0 ? dev.core : std::min(u.gpu_min_core_capacity, dev.core);
    u.gpu_min_memory_capacity = u.gpu_count == 0
                                    ? dev.memory_bytes
                                    : std::min(u.gpu_min_memory_capacity, dev.memory_bytes);
    ++u.gpu_count;
    if (v.untouched(d)) ++u.gpu_whole_free;
    u.gpu_core_capacity += dev.core;
    u.gpu_core_used += v.used_core[d];
    u.gpu_memory_capacity += dev.memory_bytes;
    u.gpu_memory_used += v.used_memory[d];
    u.gpu_max_free_core = std::max(u.gpu_max_free_core, v.free_core(d));
    u.gpu_max_free_memory = std::max(u.gpu_max_free_memory, v.free_memory(d));
  }
  if (u.gpu_count > 0) u.gpu_memory_average = u.gpu_memory_capacity / u.gpu_count;
  return u;
}

FitResult ClusterState::Filter(const Pod& pod, int node) const {
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
  NodeView view = View(node);
  for (const DeviceRequest& r : pod.devices) {
    FitResult fit = FitDeviceRequest(view, pod, r, /*domains=*/nullptr);
    if (!fit.ok()) return fit;
  }
  return FitResult::Ok();
}

namespace {
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
}  // namespace

FitResult ClusterState::Plan(const Pod& pod, int node, const PlacementStrategy& strategy,
                             Allocation* plan) const {
  FitResult fit = Filter(pod, node);
  if (!fit.ok()) return fit;
  NodeView view = View(node);
  Allocation a;
  a.pod = pod.name;
  a.node = nodes_[node].name;
  a.cpu_milli = pod.cpu_milli;
  a.memory_bytes = pod.memory_bytes;
  std::vector<std::vector<int>> domains;
  std::vector<int> chosen, gpus;
  // Requests are sorted by type, so GPUs ("gpu") are chosen before NICs ("rdma").
  for (const DeviceRequest& r : pod.devices) {
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
      a.devices.push_back(g);
    }
  }
  *plan = std::move(a);
  return FitResult::Ok();
}

double ClusterState::Score(const Pod& pod, int node, const PlacementStrategy& strategy) const {
  NodeView view = View(node);
  if (!strategy.ScoreNeedsPlan()) return strategy.ScoreNode(view, pod, {});
  Allocation plan;
  if (!Plan(pod, node, strategy, &plan).ok()) return 0.0;
  return strategy.ScoreNode(view, pod, plan.devices);
}

bool ClusterState::FastGpuFit(int node, const DeviceRequest& r) const {
  const NodeUsage& u = usage_[node];
  if (u.gpu_sharing == GpuSharing::kWholeOnly && !r.whole()) return false;
  if (u.gpu_sharing == GpuSharing::kSharedOnly && r.whole()) return false;
  if (r.whole()) return u.gpu_whole_free >= r.count;
  // Enough untouched GPUs, each big enough: the common case on a cluster that is not full.
  if (u.gpu_whole_free >= r.count && r.core <= u.gpu_min_core_capacity &&
      (r.memory_ratio > 0 ? r.memory_ratio <= 100 : r.memory_bytes <= u.gpu_min_memory_capacity))
    return true;
  const int begin = first_device_[node];
  const int end = begin + u.num_devices;
  const int64_t* used_core = used_core_.data();
  const int64_t* used_memory = used_memory_.data();
  int fitting = 0;
  for (int d = begin; d < end; ++d) {
    if (!healthy_gpu_[d]) continue;
    const int64_t bytes = r.memory_ratio > 0 ? (r.memory_ratio * capacity_memory_[d] + 99) / 100
                                             : r.memory_bytes;
    if (capacity_core_[d] - used_core[d] >= r.core &&
        capacity_memory_[d] - used_memory[d] >= bytes && ++fitting >= r.count)
      return true;
  }
  return false;
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

// What Place works out once per pod instead of once per node.
struct ClusterState::PlaceShape {
  const DeviceRequest* gpu = nullptr;
  bool simple = false;             // GPUs only, any model, no scope: the exact fast path applies
  bool check_constraints = false;  // the pod has a node selector
  bool needs_plan = false;

  PlaceShape(const Pod& pod, const PlacementStrategy& strategy) {
    gpu = pod.Find(kGpu);
    const bool gpu_only = pod.devices.size() == (gpu ? 1u : 0u);
    simple = gpu_only && pod.gpu_models.empty() && pod.scope == TopologyScope::kNone;
    check_constraints = !pod.node_selector.empty();
    needs_plan = strategy.ScoreNeedsPlan();
  }
};

bool ClusterState::PlaceNodeMayFit(const Pod& pod, int i, const PlaceShape& shape) const {
  const NodeUsage& u = usage_[i];
  if (!QuickMayFit(pod, shape.gpu, u)) return false;
  return !(shape.check_constraints || u.has_taints) || FitsNodeConstraints(pod, nodes_[i]).ok();
}

bool ClusterState::PlaceFits(const Pod& pod, int i, const PlaceShape& shape) const {
  if (!PlaceNodeMayFit(pod, i, shape)) return false;
  const NodeUsage& u = usage_[i];
  const bool fast = shape.simple && (shape.gpu == nullptr || shape.gpu->count == 1 ||
                                     !u.has_nvlink);
  if (fast) return shape.gpu == nullptr || FastGpuFit(i, *shape.gpu);
  return Filter(pod, i).ok();
}

double ClusterState::PlaceScore(const Pod& pod, int i, const PlacementStrategy& strategy,
                                const PlaceShape& shape, Allocation* plan) const {
  if (shape.needs_plan) {
    // Plan filters the devices itself.
    if (!PlaceNodeMayFit(pod, i, shape) || !Plan(pod, i, strategy, plan).ok())
      return NodeScoreCache::kInfeasible;
    return strategy.ScoreNode(View(i), pod, plan->devices);
  }
  if (!PlaceFits(pod, i, shape)) return NodeScoreCache::kInfeasible;
  return strategy.ScoreNode(View(i), pod, {});
}

void ClusterState::PlaceScoreBatch(const Pod& pod, const PlacementStrategy& strategy,
                                   const PlaceShape& shape, const int* nodes, int count,
                                   double* out) {
  // Branchy feasibility checks and the divisions of the score in separate loops: the scoring
  // loop has independent iterations the CPU can overlap.
  std::vector<int>& feasible = place_feasible_;
  feasible.clear();
  for (int k = 0; k < count; ++k) {
    if (PlaceFits(pod, nodes[k], shape))
      feasible.push_back(k);
    else
      out[k] = NodeScoreCache::kInfeasible;
  }
  const PodDemand demand(pod);
  const NodeUsage* usage = usage_.data();
  if (strategy.AllocationScoreSign() > 0) {
    for (int k : feasible)
      out[k] = MostAllocatedScore(AllocatedFractionAfter(usage[nodes[k]], demand));
  } else {
    for (int k : feasible)
      out[k] = LeastAllocatedScore(AllocatedFractionAfter(usage[nodes[k]], demand));
  }
}

std::string ClusterState::NoFitReason(const Pod& pod, const std::vector<int>* candidates) const {
  const int total = candidates ? static_cast<int>(candidates->size()) : num_nodes();
  std::map<std::string, int> reasons;
  for (int k = 0; k < total; ++k) {
    int i = candidates ? (*candidates)[k] : k;
    FitResult f = FitsNodeConstraints(pod, nodes_[i]);
    if (f.ok()) f = Filter(pod, i);
    if (f.ok()) f = FitResult::Unschedulable("no devices satisfy the request");
    ++reasons[f.reason];
  }
  return NodesUnavailable(total, reasons);
}

PlaceResult ClusterState::Place(const Pod& pod, const PlacementStrategy& strategy, bool commit,
                                const std::vector<int>* candidates) {
  PlaceResult result;
  if (allocations_.count(pod.name)) {
    result.reason = absl::StrFormat("pod %s is already placed", pod.name);
    return result;
  }
  const PlaceShape shape(pod, strategy);
  // Strategies that score by allocation alone are scored many nodes at a time.
  const bool batch = !shape.needs_plan && strategy.AllocationScoreSign() != 0;
  int best = -1;
  double best_score = -1.0;
  Allocation best_plan, plan;
  bool have_plan = false;
  if (candidates == nullptr && score_cache_enabled_ && strategy.Deterministic()) {
    // Only nodes changed since this shape was last placed are scored again.
    const int n = num_nodes();
    NodeScoreCache::Entry& e = score_cache_.Get(strategy.instance_id(), pod, n);
    const uint64_t* version = node_version_.data();
    uint64_t* seen = e.seen.data();
    double* score = e.score.data();
    if (batch) {
      place_nodes_.clear();
      for (int i = 0; i < n; ++i) {
        if (seen[i] != version[i]) {
          place_nodes_.push_back(i);
          seen[i] = version[i];
        }
      }
      place_scores_.resize(place_nodes_.size());
      PlaceScoreBatch(pod, strategy, shape, place_nodes_.data(),
                      static_cast<int>(place_nodes_.size()), place_scores_.data());
      for (size_t k = 0; k < place_nodes_.size(); ++k) score[place_nodes_[k]] = place_scores_[k];
    } else {
      for (int i = 0; i < n; ++i) {
        if (seen[i] != version[i]) {
          score[i] = PlaceScore(pod, i, strategy, shape, &plan);
          seen[i] = version[i];
        }
      }
    }
    // Two tight passes (the maximum, then its first node) instead of one loop with a branchy
    // carried dependency: at 5,000 nodes this is most of a cached placement's time.
    double top = best_score;
    for (int i = 0; i < n; ++i) top = score[i] > top ? score[i] : top;
    if (top > best_score) {
      for (int i = 0; i < n; ++i) {
        if (score[i] == top) {
          best = i;
          break;
        }
      }
      best_score = top;
    }
  } else if (batch) {
    const int total = candidates ? static_cast<int>(candidates->size()) : num_nodes();
    const int* nodes = candidates ? candidates->data() : nullptr;
    if (nodes == nullptr) {
      place_nodes_.resize(total);
      for (int i = 0; i < total; ++i) place_nodes_[i] = i;
      nodes = place_nodes_.data();
    }
    place_scores_.resize(total);
    PlaceScoreBatch(pod, strategy, shape, nodes, total, place_scores_.data());
    for (int k = 0; k < total; ++k) {
      if (place_scores_[k] > best_score) {
        best_score = place_scores_[k];
        best = nodes[k];
      }
    }
  } else {
    const int total = candidates ? static_cast<int>(candidates->size()) : num_nodes();
    for (int k = 0; k < total; ++k) {
      int i = candidates ? (*candidates)[k] : k;
      double score = PlaceScore(pod, i, strategy, shape, &plan);
      if (score > best_score) {
        best_score = score;
        best = i;
        // A strategy with random draws must keep the plan it was scored with.
        if (shape.needs_plan) best_plan = plan;
      }
    }
    have_plan = shape.needs_plan;
  }
  if (best < 0) {
    // Only now pay for exact reasons.
    result.reason = NoFitReason(pod, candidates);
    return result;
  }
  if (!have_plan) {
    FitResult f = Plan(pod, best, strategy, &best_plan);
    if (!f.ok()) {
      result.reason = f.reason;
      return result;
    }
  }
  absl::Status s = Reserve(best_plan);
  if (s.ok() && commit) s = Commit(pod.name);
  if (!s.ok()) {
    result.reason = std::string(s.message());
    return result;
  }
  result.placed = true;
  result.allocation = *FindAllocation(pod.name);
  return result;
}

absl::Status ClusterState::CheckInvariants() const {
  std::vector<int64_t> core(num_devices(), 0), memory(num_devices(), 0);
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
    }
  }
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
  }
  return absl::OkStatus();
}

bool ClusterState::operator==(const ClusterState& other) const {
  if (nodes_ != other.nodes_) return false;
  for (int i = 0; i < num_devices(); ++i)
    if (used_core_[i] != other.used_core_[i] || used_memory_[i] != other.used_memory_[i])
      return false;
  if (allocations_.size() != other.allocations_.size()) return false;
  for (const auto& [name, a] : allocations_) {
    const Allocation* b = other.FindAllocation(name);
    if (b == nullptr || !(a == *b)) return false;
  }
  return true;
}

FitResult FitsNodeConstraints(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value)
      return FitResult::Unresolvable("node(s) didn't match Pod's node affinity/selector");
  }
  for (const Taint& t : node.taints) {
    if (t.effect == "PreferNoSchedule") continue;
    bool tolerated = false;
    for (const Toleration& tol : pod.tolerations) {
      if (!tol.effect.empty() && tol.effect != t.effect) continue;
      if (tol.op == "Exists" && (tol.key.empty() || tol.key == t.key)) tolerated = true;
      if (tol.op != "Exists" && tol.key == t.key && tol.value == t.value) tolerated = true;
      if (tolerated) break;
    }
    if (!tolerated)
      return FitResult::Unresolvable(
          absl::StrFormat("node(s) had untolerated taint {%s: %s}", t.key, t.value));
  }
  return FitResult::Ok();
}

int64_t RequestBytesOn(const DeviceRequest& request, const Device& device) {
  if (request.memory_ratio > 0)
    return (request.memory_ratio * device.memory_bytes + 99) / 100;
  return request.memory_bytes;
}

}  // namespace gpufleet
