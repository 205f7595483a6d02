#include "gpufleet/engine/reservation_ledger.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/core/rdma_vf.h"
#include "gpufleet/engine/session.h"
#include "gpufleet/engine/statement.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/node_plan.h"

namespace gpufleet::engine {
namespace {

// Pod names with '/' and '@' are not valid Kubernetes names, so a hold never collides with a task.
std::string HoldName(const std::string& job, const std::string& node) {
  return absl::StrFormat("reservation-hold/%s@%s", job, node);
}

int LocalDevice(const Node& node, const std::string& type, int minor) {
  for (size_t d = 0; d < node.devices.size(); ++d)
    if (node.devices[d].minor == minor && node.devices[d].type == type) return static_cast<int>(d);
  return -1;
}

double GpuEquivalents(const Allocation& a) {
  double g = 0;
  for (const DeviceGrant& d : a.devices)
    if (d.type == kGpu) g += static_cast<double>(d.core) / 100.0;
  return g;
}

// The target's pending tasks (with requests) its gang still needs, in task order.
std::vector<int> NeededTasks(const Session& s, int job) {
  const JobInfo& j = s.jobs()[job];
  std::vector<int> out;
  for (int t : j.tasks) {
    const TaskInfo& task = s.tasks()[t];
    if (task.status == TaskStatus::kPending && !task.best_effort) out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return s.TaskLess(a, b); });
  const int need = std::max(0, j.min_available() - j.occupied);
  if (static_cast<int>(out.size()) > need) out.resize(need);
  return out;
}

int TaskByName(const Session& s, int job, const std::string& name) {
  for (int t : s.jobs()[job].tasks)
    if (s.tasks()[t].name() == name) return t;
  return -1;
}

}  // namespace

void ReservationLedger::Open(Session& s, int job) {
  HoldPlan remembered = std::move(remembered_);
  remembered_ = {};
  plan_ = {};
  needs_.clear();
  target_ = elected_ = -1;
  if (job < 0) return;
  const JobInfo& j = s.job(job);
  if (!j.valid || !j.inqueue || j.occupied >= j.min_available()) return;
  target_ = elected_ = job;
  plan_ = remembered.job == j.name() && PlanStillFits(s, job, remembered) ? std::move(remembered)
                                                                           : Choose(s, job);
  if (plan_.tasks.empty()) return;
  needs_ = Needs(s);
  // Admits depends on the node, not only on its spec and usage.
  s.DisableNodeClasses();
  Hold(s);
}

bool ReservationLedger::PlanStillFits(const Session& s, int job, const HoldPlan& plan) const {
  std::vector<int> needed = NeededTasks(s, job);
  if (needed.size() != plan.tasks.size()) return false;
  for (const Allocation& a : plan.tasks)
    if (TaskByName(s, job, a.pod) < 0 ||
        std::none_of(needed.begin(), needed.end(),
                     [&](int t) { return s.tasks()[t].name() == a.pod; }))
      return false;
  // The planned allocations together must fit the nodes' capacity and constraints (a node may
  // have been removed, relabelled, or lost a device).
  for (const Allocation& a : plan.tasks) {
    const int n = s.state().FindNode(a.node);
    if (n < 0) return false;
    const TaskInfo& task = s.tasks()[TaskByName(s, job, a.pod)];
    if (!NodeAdmission(s.state(), *task.pod).Constraints(n)) return false;
  }
  HoldPlan copy = plan;
  ReservationLedger probe;
  probe.plan_ = std::move(copy);
  for (const NodeNeed& nn : probe.Needs(s)) {
    if (nn.node < 0) return false;
    const Node& node = s.state().node(nn.node);
    if (nn.cpu > node.cpu_milli || nn.memory > node.memory_bytes) return false;
    for (size_t d = 0; d < node.devices.size(); ++d) {
      if (nn.core[d] == 0 && nn.device_memory[d] == 0) continue;
      const Device& dev = node.devices[d];
      if (!dev.healthy || nn.core[d] > dev.core || nn.device_memory[d] > dev.memory_bytes)
        return false;
    }
  }
  return true;
}

HoldPlan ReservationLedger::Choose(const Session& s, int job) const {
  // A gang required inside one topology domain is planned inside one: the domain where the least
  // running work must drain (ties to the earlier domain).
  const GangTopology* gt = s.gang_topology();
  const topology::Constraint& c = s.jobs()[job].spec->topology;
  const int level = gt != nullptr && !c.required.empty() ? gt->topology.FindLevel(c.required) : -1;
  if (level < 0) return ChooseWithin(s, job, nullptr, nullptr);
  HoldPlan best;
  double best_cost = std::numeric_limits<double>::infinity();
  std::vector<char> allowed(s.state().num_nodes(), 0);
  const topology::Topology& t = gt->topology;
  for (int d = 0; d < t.num_domains(level); ++d) {
    std::fill(allowed.begin(), allowed.end(), 0);
    for (int p = t.first_pos(level, d); p < t.end_pos(level, d); ++p) allowed[t.order()[p]] = 1;
    double cost = 0;
    HoldPlan plan = ChooseWithin(s, job, &allowed, &cost);
    if (!plan.tasks.empty() && cost < best_cost) {
      best = std::move(plan);
      best_cost = cost;
    }
  }
  return best;
}

HoldPlan ReservationLedger::ChooseWithin(const Session& s, int job, const std::vector<char>* allowed,
                                         double* total_cost) const {
  HoldPlan plan;
  plan.job = s.jobs()[job].name();
  const ClusterState& now = s.state();
  ClusterState scratch = now;  // the plan's view: work it waits for is released here
  std::vector<std::vector<Allocation>> occupants(now.num_nodes());
  for (const Allocation* a : now.Allocations()) {
    const int n = now.FindNode(a->node);
    if (n < 0 || TaskByName(s, job, a->pod) >= 0) continue;  // the target's own tasks stay
    occupants[n].push_back(*a);
  }
  // Smallest first: the fewest GPUs drained before a task fits.
  for (auto& occ : occupants)
    std::stable_sort(occ.begin(), occ.end(), [](const Allocation& a, const Allocation& b) {
      const double ga = GpuEquivalents(a), gb = GpuEquivalents(b);
      if (ga != gb) return ga < gb;
      return a.cpu_milli < b.cpu_milli;
    });
  auto restore = [&](const std::vector<Allocation>& occ, size_t k) {
    for (size_t i = k; i-- > 0;) {
      Allocation a = occ[i];
      const bool bound = a.state == AllocationState::kBound;
      a.state = AllocationState::kReserved;
      if (scratch.Reserve(a).ok() && bound) (void)scratch.Commit(a.pod);
    }
  };
  for (int t : NeededTasks(s, job)) {
    const TaskInfo& task = s.tasks()[t];
    int best = -1;
    size_t best_drained = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    Allocation best_alloc;
    const NodeAdmission admission(scratch, *task.pod);
    for (int n = 0; n < scratch.num_nodes(); ++n) {
      if (allowed != nullptr && !(*allowed)[n]) continue;
      if (!admission.Constraints(n)) continue;
      const NodeView before = scratch.View(n);
      std::vector<int64_t> free_core(before.num_devices()), free_mem(before.num_devices());
      for (int d = 0; d < before.num_devices(); ++d) {
        free_core[d] = before.free_core(d);
        free_mem[d] = before.free_memory(d);
      }
      const int64_t free_cpu = scratch.usage(n).cpu_capacity - scratch.usage(n).cpu_used;
      // Labels and taints are judged above, once per node.
      auto plan_here = [&] {
        return PlanOnNode(scratch, *task.pod, n, s.strategy(), Admission::kCapacityOnly);
      };
      size_t k = 0;
      Placement planned = plan_here();
      while (!planned.ok() && k < occupants[n].size()) {
        (void)scratch.Release(occupants[n][k].pod);
        ++k;
        planned = plan_here();
      }
      restore(occupants[n], k);
      if (!planned.ok()) continue;
      const Allocation& p = planned.allocation;
      // The cost is what must drain: the part of the planned devices (and cpu) not free now.
      double cost = 0;
      for (const DeviceGrant& g : p.devices) {
        const int d = LocalDevice(scratch.node(n), g.type, g.minor);
        if (d >= 0 && g.type == kGpu) cost += std::max<int64_t>(0, g.core - free_core[d]) / 100.0;
        if (d >= 0 && g.type != kGpu) cost += std::max<int64_t>(0, g.core - free_core[d]) / 1e4;
      }
      const int64_t cap_cpu = std::max<int64_t>(1, scratch.usage(n).cpu_capacity);
      cost += 1e-6 * static_cast<double>(std::max<int64_t>(0, p.cpu_milli - free_cpu)) / cap_cpu;
      if (cost < best_cost) {
        best = n;
        best_cost = cost;
        best_drained = k;
        best_alloc = p;
      }
      if (cost == 0) break;  // nothing to drain: the earliest such node
    }
    if (best < 0) return HoldPlan{};  // no node can ever take this task: hold nothing
    if (total_cost != nullptr) *total_cost += best_cost;
    for (size_t i = 0; i < best_drained; ++i) (void)scratch.Release(occupants[best][i].pod);
    occupants[best].erase(occupants[best].begin(), occupants[best].begin() + best_drained);
    best_alloc.pod = task.name();
    best_alloc.state = AllocationState::kReserved;
    best_alloc.assume_time_ns = 0;
    if (!scratch.Reserve(best_alloc).ok()) return HoldPlan{};
    plan.tasks.push_back(best_alloc);
  }
  return plan;
}

std::vector<ReservationLedger::NodeNeed> ReservationLedger::Needs(const Session& s) const {
  std::vector<NodeNeed> out;
  for (const Allocation& a : plan_.tasks) {
    const int n = s.state().FindNode(a.node);
    auto it = std::find_if(out.begin(), out.end(), [&](const NodeNeed& x) { return x.node == n; });
    if (it == out.end()) {
      NodeNeed nn;
      nn.node = n;
      const size_t devices = n < 0 ? 0 : s.state().node(n).devices.size();
      nn.core.assign(devices, 0);
      nn.device_memory.assign(devices, 0);
      nn.vfs.assign(devices, {});
      out.push_back(std::move(nn));
      it = out.end() - 1;
    }
    it->cpu += a.cpu_milli;
    it->memory += a.memory_bytes;
    if (n < 0) continue;
    for (const DeviceGrant& g : a.devices) {
      const int d = LocalDevice(s.state().node(n), g.type, g.minor);
      if (d < 0) {
        it->node = -1;  // a device that is gone: the plan no longer fits
        continue;
      }
      it->core[d] += g.core;
      it->device_memory[d] += g.memory_bytes;
      for (const VirtualFunction& vf : g.vfs) {
        const int k = FindVf(s.state().node(n).devices[d], vf);
        if (k < 0)
          it->node = -1;  // a VF that is gone: the plan no longer fits
        else
          it->vfs[d].push_back(k);
      }
    }
  }
  return out;
}

void ReservationLedger::Hold(Session& s) {
  held_.clear();
  for (const NodeNeed& nn : needs_) {
    if (nn.node < 0) continue;
    const NodeView v = s.state().View(nn.node);
    const NodeUsage& u = s.state().usage(nn.node);
    Allocation a;
    a.pod = HoldName(plan_.job, v.node->name);
    a.node = v.node->name;
    a.cpu_milli = std::clamp<int64_t>(u.cpu_capacity - u.cpu_used, 0, nn.cpu);
    a.memory_bytes = std::clamp<int64_t>(u.memory_capacity - u.memory_used, 0, nn.memory);
    for (int d = 0; d < v.num_devices(); ++d) {
      const int64_t core = std::clamp<int64_t>(v.free_core(d), 0, nn.core[d]);
      const int64_t mem = std::clamp<int64_t>(v.free_memory(d), 0, nn.device_memory[d]);
      DeviceGrant g{v.device(d).type, v.device(d).minor, core, mem};
      // The planned VFs that are free now: held like the rest, so no other pod gets them.
      if (v.has_vfs(d))
        for (int k : nn.vfs[d])
          if (v.vf_taken[d][k] == 0) g.vfs.push_back(VfAt(v.device(d), k));
      if (core > 0 || mem > 0 || !g.vfs.empty()) a.devices.push_back(std::move(g));
    }
    if (a.cpu_milli == 0 && a.memory_bytes == 0 && a.devices.empty()) continue;
    if (s.state().Reserve(a).ok()) held_.push_back(std::move(a));
  }
}

void ReservationLedger::Unhold(Session& s) {
  if (held_.empty()) return;
  for (const Allocation& a : held_) (void)s.state().Unreserve(a.pod);
  held_.clear();
  s.OnRelease();  // capacity came back: cached "does not fit" answers are stale
}

void ReservationLedger::Release(Session& s) { Unhold(s); }

bool ReservationLedger::Admits(const Session& s, const TaskInfo& task, int node) const {
  if (target_ < 0 || task.job == target_ || needs_.empty()) return true;
  auto nn = std::find_if(needs_.begin(), needs_.end(), [&](const NodeNeed& x) { return x.node == node; });
  if (nn == needs_.end()) return true;
  // The predicates judged labels and taints; capacity says no: nothing to hold back.
  const Placement planned =
      PlanOnNode(s.state(), *task.pod, node, s.strategy(), Admission::kCapacityOnly);
  if (!planned.ok()) return true;
  const Allocation& p = planned.allocation;
  const Allocation* held = nullptr;
  for (const Allocation& h : held_)
    if (h.node == p.node) held = &h;
  const NodeView v = s.state().View(node);
  const NodeUsage& u = s.state().usage(node);
  // Work of other jobs on the node (all usage but the hold) plus this task must leave the plan's
  // share of every resource free.
  auto within = [](int64_t used, int64_t held_part, int64_t add, int64_t cap, int64_t need) {
    return need == 0 || add == 0 || used - held_part + add <= cap - need;
  };
  if (!within(u.cpu_used, held ? held->cpu_milli : 0, p.cpu_milli, u.cpu_capacity, nn->cpu) ||
      !within(u.memory_used, held ? held->memory_bytes : 0, p.memory_bytes, u.memory_capacity,
              nn->memory))
    return false;
  for (const DeviceGrant& g : p.devices) {
    const int d = LocalDevice(*v.node, g.type, g.minor);
    if (d < 0) continue;
    int64_t held_core = 0, held_mem = 0;
    if (held != nullptr)
      for (const DeviceGrant& h : held->devices)
        if (h.type == g.type && h.minor == g.minor) {
          held_core = h.core;
          held_mem = h.memory_bytes;
        }
    if (!within(v.used_core[d], held_core, g.core, v.device(d).core, nn->core[d]) ||
        !within(v.used_memory[d], held_mem, g.memory_bytes, v.device(d).memory_bytes,
                nn->device_memory[d]))
      return false;
    // A VF the plan names (one freed in this session, say) stays for the target.
    for (const VirtualFunction& vf : g.vfs) {
      const int k = FindVf(v.device(d), vf);
      if (std::find(nn->vfs[d].begin(), nn->vfs[d].end(), k) != nn->vfs[d].end()) return false;
    }
  }
  return true;
}

ReservationLedger::Lift::Lift(Session& s, int job) {
  ReservationLedger& l = s.reservations();
  if (l.target_ < 0 || job != l.target_ || l.plan_.tasks.empty()) return;
  s_ = &s;
  l.Unhold(s);
}

ReservationLedger::Lift::~Lift() {
  if (s_ == nullptr) return;
  ReservationLedger& l = s_->reservations();
  const JobInfo& j = s_->job(l.target_);
  if (j.occupied >= j.min_available()) {
    // Started: the plan is done and nothing is held any more.
    l.plan_ = {};
    l.needs_.clear();
    l.target_ = -1;
    return;
  }
  l.Hold(*s_);
}

bool ReservationLedger::StartOnPlan(Session& s) {
  if (target_ < 0 || plan_.tasks.empty()) return false;
  const int job = target_;
  Lift lift(s, job);
  Statement st(s);  // destroyed (discarded unless committed) before the lift holds again
  const std::vector<Allocation> tasks = plan_.tasks;
  for (const Allocation& a : tasks) {
    const int t = TaskByName(s, job, a.pod);
    const int n = s.state().FindNode(a.node);
    if (t < 0 || n < 0) return false;
    const TaskInfo& task = s.task(t);
    if (!s.Allocatable(s.queue(s.job(job).queue), task) || !s.Predicate(task, n).ok()) return false;
    if (!st.Allocate(t, a).ok()) return false;
  }
  if (!s.JobReady(s.job(job))) return false;
  st.Commit();
  s.job(job).reason.clear();
  return true;
}

std::vector<HeldCapacity> ReservationLedger::Held(const Session&) const {
  std::vector<HeldCapacity> out;
  for (const Allocation& a : held_) {
    HeldCapacity h;
    h.node = a.node;
    h.job = plan_.job;
    h.resources[0] = static_cast<double>(a.cpu_milli);
    h.resources[1] = static_cast<double>(a.memory_bytes);
    h.resources[2] = GpuEquivalents(a);
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<std::pair<int, int>> ReservationLedger::HeldWholeGpus(const Session& s) const {
  std::vector<std::pair<int, int>> out;
  for (const Allocation& a : held_) {
    const int n = s.state().FindNode(a.node);
    if (n < 0) continue;
    const NodeView v = s.state().View(n);
    for (const DeviceGrant& g : a.devices) {
      const int d = LocalDevice(*v.node, g.type, g.minor);
      if (d >= 0 && g.type == kGpu && v.used_core[d] == g.core && v.used_memory[d] == g.memory_bytes)
        out.emplace_back(n, d);
    }
  }
  return out;
}

std::string ReservationLedger::Note(const Session& s) const {
  if (target_ < 0) return "";
  if (plan_.tasks.empty())
    return "reservation target, but no node can ever take its gang: nothing is held";
  double planned = 0, held = 0;
  for (const Allocation& a : plan_.tasks) planned += GpuEquivalents(a);
  std::vector<std::string> nodes;
  for (const HeldCapacity& h : Held(s)) {
    held += h.resources[2];
    nodes.push_back(h.node);
  }
  std::vector<std::string> planned_nodes;
  for (const NodeNeed& nn : needs_)
    if (nn.node >= 0) planned_nodes.push_back(s.state().node(nn.node).name);
  return absl::StrFormat(
      "reservation target: planned on %s; holding %g of %g GPUs (%s) until the work running "
      "there drains",
      absl::StrJoin(planned_nodes, ", "), held, planned,
      nodes.empty() ? "nothing free yet" : absl::StrJoin(nodes, ", "));
}

}  // namespace gpufleet::engine
