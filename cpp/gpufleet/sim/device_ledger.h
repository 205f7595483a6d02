// The simulator's GPUs as real devices: one node per `gpus_per_node` GPUs of a model, held in the
// foundation's ClusterState (one per model: a job-time plan already fixes the model, so the node
// search never needs a model constraint) and chosen by a registered placement strategy. Policies
// plan in GPU counts per model (policies/job_time_policy.h); the ledger turns each start into
// whole-GPU allocations, one pod per node the job spans, preferring as few nodes as the free GPUs allow
// (largest piece first). Any count the pool admits can be placed, because a piece never asks for
// more GPUs than the freest node of that model has; so placement changes where a job runs, never
// when.
#ifndef GPUFLEET_SIM_DEVICE_LEDGER_H_
#define GPUFLEET_SIM_DEVICE_LEDGER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/policies/gpu_pool.h"
#include "gpufleet/topology/topology.h"

namespace gpufleet::sim {

// Racks of a model's nodes (consecutive nodes, `nodes_per_rack` to a rack, `racks_per_block` racks
// to a block; 0: no such level). With racks, a start is a gang that prefers one rack, then one
// block, then spreads (topology/gang_placer.h, best fit): any count the pool admits still fits,
// so the timing is unchanged and only where a job runs differs.
struct RackLayout {
  int nodes_per_rack = 0;
  int racks_per_block = 0;
};

class DeviceLedger {
 public:
  // `strategy`: a registered placement strategy spec ("binpack", "spread", ...).
  static absl::StatusOr<std::unique_ptr<DeviceLedger>> Create(const jobtime::GpuPool& pool,
                                                              const std::string& strategy,
                                                              int num_jobs,
                                                              RackLayout racks = {});

  // Allocates `count` whole GPUs of `model` to `job`; returns the number of nodes they span.
  // Fails (changing nothing) when the model has fewer than `count` free GPUs.
  absl::StatusOr<int> Start(int job, int count, int model);
  // Frees everything `job` holds (nothing when it holds nothing).
  // (With racks, Start places the job by them; see RackLayout.)
  void Stop(int job);

  int num_models() const { return static_cast<int>(models_.size()); }
  // The nodes, devices and allocations of one model (pods are named "job.piece").
  const ClusterState& state(int model) const { return models_[model].state; }
  int free_gpus(int model) const;
  int num_allocations() const;

 private:
  struct ModelNodes {
    ClusterState state;
    Placer placer;
    std::vector<int> node_free;  // free GPUs per node
    std::vector<int> histogram;  // how many nodes have k free GPUs, k = 0 .. gpus_per_node
    std::vector<Pod> shapes;     // the request for k GPUs (its name is set per use)
    std::unique_ptr<topology::Topology> racks;  // with a RackLayout
  };
  // A start as a gang preferring one rack: per node, one pod of the GPUs it takes there.
  absl::StatusOr<int> StartByRacks(ModelNodes& m, int job, int count);

  DeviceLedger() = default;
  void Count(ModelNodes& m, int node, int delta_free);

  std::unique_ptr<PlacementStrategy> strategy_;
  std::vector<ModelNodes> models_;
  struct Held {
    int pieces;  // pods it holds now
    int model;   // the model of those pods
  };
  // Only jobs holding GPUs (at most the GPUs' number), so a run of millions of jobs costs nothing
  // per job here.
  absl::flat_hash_map<int, Held> held_;
  int num_jobs_ = 0;
};

}  // namespace gpufleet::sim

#endif  // GPUFLEET_SIM_DEVICE_LEDGER_H_
