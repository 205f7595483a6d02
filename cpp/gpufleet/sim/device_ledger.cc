#include "gpufleet/sim/device_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/node_plan.h"
#include "gpufleet/topology/gang_placer.h"

namespace gpufleet::sim {

using jobtime::GpuModel;
using jobtime::GpuPool;
namespace {
// Room for every piece a node can hold; the pods carry no cpu or memory.
constexpr int64_t kNodeCpuMilli = int64_t{1} << 40;
constexpr int64_t kNodeMemory = int64_t{1} << 50;
constexpr int64_t kDefaultGpuMemory = int64_t{80} << 30;  // when the pool does not say

std::string PieceName(int job, int piece) { return absl::StrCat(job, ".", piece); }
// The simulator's own labels for its racks and blocks.
constexpr char kRackLabel[] = "gpufleet.sim/rack";
constexpr char kBlockLabel[] = "gpufleet.sim/block";
}  // namespace

absl::StatusOr<std::unique_ptr<DeviceLedger>> DeviceLedger::Create(const GpuPool& pool,
                                                                   const std::string& strategy,
                                                                   int num_jobs, RackLayout racks) {
  if (racks.nodes_per_rack < 0 || racks.racks_per_block < 0)
    return absl::InvalidArgumentError("simulate racks: nodes per rack and racks per block must be >= 0");
  std::unique_ptr<DeviceLedger> l(new DeviceLedger());
  auto made = MakeStrategy(strategy);
  if (!made.ok())
    return absl::Status(made.status().code(),
                        absl::StrCat("simulate placement: ", made.status().message()));
  l->strategy_ = *std::move(made);
  l->models_.resize(pool.num_models());
  for (int m = 0; m < pool.num_models(); ++m) {
    const GpuModel& gm = pool.model(m);
    ModelNodes& mn = l->models_[m];
    mn.state.set_clock([] { return int64_t{0}; });  // assume times mean nothing here
    mn.histogram.assign(gm.gpus_per_node + 1, 0);
    for (int first = 0, k = 0; first < gm.count; first += gm.gpus_per_node, ++k) {
      Node n;
      n.name = absl::StrCat(gm.name, "-", k);
      n.cpu_milli = kNodeCpuMilli;
      n.memory_bytes = kNodeMemory;
      n.max_pods = gm.gpus_per_node;
      if (racks.nodes_per_rack > 0) {
        const int rack = k / racks.nodes_per_rack;
        n.labels[kRackLabel] = absl::StrCat("r", rack);
        if (racks.racks_per_block > 0) n.labels[kBlockLabel] = absl::StrCat("b", rack / racks.racks_per_block);
      }
      const int gpus = std::min(gm.gpus_per_node, gm.count - first);
      for (int g = 0; g < gpus; ++g) {
        Device d;
        d.minor = g;
        d.model = gm.name;
        d.memory_bytes = gm.memory_gib > 0 ? static_cast<int64_t>(gm.memory_gib * (1 << 30))
                                           : kDefaultGpuMemory;
        n.devices.push_back(std::move(d));
      }
      RETURN_IF_ERROR(mn.state.AddNode(n));
      mn.node_free.push_back(gpus);
      ++mn.histogram[gpus];
    }
    if (racks.nodes_per_rack > 0) {
      std::vector<topology::Level> levels;
      if (racks.racks_per_block > 0) levels.push_back({"block", kBlockLabel});
      levels.push_back({"rack", kRackLabel});
      ASSIGN_OR_RETURN(topology::Topology t, topology::Topology::FromLabels(mn.state, levels));
      mn.racks = std::make_unique<topology::Topology>(std::move(t));
    }
    mn.shapes.resize(gm.gpus_per_node + 1);
    for (int k = 1; k <= gm.gpus_per_node; ++k) {
      DeviceRequest r;
      r.type = kGpu;
      r.count = k;
      r.core = 100;
      r.memory_ratio = 100;
      mn.shapes[k].devices.push_back(r);
    }
  }
  l->num_jobs_ = num_jobs;
  return l;
}

void DeviceLedger::Count(ModelNodes& m, int node, int delta_free) {
  --m.histogram[m.node_free[node]];
  m.node_free[node] += delta_free;
  ++m.histogram[m.node_free[node]];
}

int DeviceLedger::free_gpus(int model) const {
  int total = 0;
  const std::vector<int>& h = models_[model].histogram;
  for (size_t k = 1; k < h.size(); ++k) total += static_cast<int>(k) * h[k];
  return total;
}

int DeviceLedger::num_allocations() const {
  int n = 0;
  for (const ModelNodes& m : models_) n += m.state.num_allocations();
  return n;
}

absl::StatusOr<int> DeviceLedger::Start(int job, int count, int model) {
  if (model < 0 || model >= num_models() || count < 1 || job < 0 ||
      job >= num_jobs_)
    return absl::InvalidArgumentError("device ledger: bad job, model or GPU count");
  if (held_.contains(job))
    return absl::FailedPreconditionError(absl::StrFormat("job %d already holds GPUs", job));
  if (free_gpus(model) < count)
    return absl::FailedPreconditionError(absl::StrFormat(
        "device ledger: %d GPUs asked, %d free on that model", count, free_gpus(model)));
  ModelNodes& m = models_[model];
  if (m.racks != nullptr) return StartByRacks(m, job, count);
  int pieces = 0;
  int remaining = count;
  while (remaining > 0) {
    int freest = static_cast<int>(m.histogram.size()) - 1;
    while (m.histogram[freest] == 0) --freest;  // stops above 0: free GPUs remain
    const int piece = std::min(remaining, freest);
    Pod& pod = m.shapes[piece];  // reused: only the name changes between starts
    pod.name = PieceName(job, pieces);
    const Placement r = m.placer.Place(m.state, {.pod = pod, .strategy = *strategy_});
    if (!r.ok()) {
      if (pieces > 0) {
        held_[job] = Held{pieces, model};
        Stop(job);  // cannot happen while the histogram is right; leave nothing half-placed
      }
      return absl::InternalError(absl::StrCat("device ledger: ", r.reason));
    }
    Count(m, r.node, -piece);
    ++pieces;
    remaining -= piece;
  }
  held_[job] = Held{pieces, model};
  return pieces;
}

absl::StatusOr<int> DeviceLedger::StartByRacks(ModelNodes& m, int job, int count) {
  topology::GangRequest gang;
  topology::GroupRequest gpus;
  gpus.name = "gpus";
  gpus.pod = m.shapes[1];
  gpus.count = count;
  gpus.constraint.preferred = "rack";
  gang.groups.push_back(std::move(gpus));
  topology::GangPlacer placer;
  ASSIGN_OR_RETURN(topology::GangPlacement p, placer.Choose(m.state, *m.racks, gang, *strategy_));
  if (!p.ok()) return absl::InternalError(absl::StrCat("device ledger: ", p.reason));
  int pieces = 0;
  for (const auto& [node, k] : p.groups[0].nodes) {
    Pod& pod = m.shapes[k];
    pod.name = PieceName(job, pieces);
    Placement plan = PlanOnNode(m.state, pod, node, *strategy_);
    absl::Status st = plan.ok() ? m.state.Reserve(plan.allocation) : absl::InternalError(plan.reason);
    if (st.ok()) st = m.state.Commit(pod.name);
    if (!st.ok()) {
      held_[job] = Held{pieces, static_cast<int>(&m - models_.data())};
      Stop(job);  // cannot happen while the counts are exact; leave nothing half-placed
      return absl::InternalError(absl::StrCat("device ledger: ", st.message()));
    }
    Count(m, node, -k);
    ++pieces;
  }
  held_[job] = Held{pieces, static_cast<int>(&m - models_.data())};
  return pieces;
}

void DeviceLedger::Stop(int job) {
  auto it = held_.find(job);
  if (it == held_.end()) return;
  const Held held = it->second;
  held_.erase(it);
  ModelNodes& m = models_[held.model];
  for (int k = 0; k < held.pieces; ++k) {
    const std::string name = PieceName(job, k);
    const Allocation* a = m.state.FindAllocation(name);
    if (a == nullptr) continue;
    const int node = m.state.FindNode(a->node);
    const int gpus = static_cast<int>(a->devices.size());
    (void)m.state.Release(name);
    Count(m, node, gpus);
  }
}

}  // namespace gpufleet::sim
