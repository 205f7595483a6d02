// The openb GPU-sharing replay of Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
// Workloads with Fragmentation Gradient Descent" (USENIX ATC 2023), Section 6: the trace's pods
// arrive one by one in a seeded random order, each placed at once by a placement strategy or
// failed, nothing departs; once the trace is used up, pods drawn from it at random (with
// replacement) keep arriving until the arrived GPU requests reach `stop_at` times the cluster's GPU
// capacity. After every arrival the replay records arrived demand, GPU allocation and
// fragmentation (against the trace's typical pods, fragmentation.h).
//
// Ties between equally scored nodes go, by default, to a seeded random order of the nodes fixed
// for the whole run: the study's simulator gives ties to the smallest node name, but first renames
// every node with a random four-digit prefix (a permutation drawn after the arrival order), so its
// "smallest name" is a random node order per seed. docs/replay.md explains the effect.
#ifndef GPUFLEET_SIM_OPENB_REPLAY_H_
#define GPUFLEET_SIM_OPENB_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/registry.h"
#include "gpufleet/placement/strategies/fragmentation.h"

namespace gpufleet {

// One row of openb_node_list_*.csv.
struct OpenbNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  std::string model;
};

// One row of openb_pod_list_*.csv: gpu_milli is the share of one GPU (0-1000, multiples of 10).
struct OpenbPod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;
  std::vector<std::string> gpu_spec;  // allowed models, empty = any
};

// Which of several equally scored nodes a pod takes.
enum class OpenbTies {
  kSeededOrder,  // a random node order drawn once per run from the seed (the study's simulator)
  kName,         // the smallest node name
  kRandom,       // a fresh random node for every pod (upstream kube-scheduler's reservoir sampling)
};

struct OpenbReplayOptions {
  std::string policy = "fgd";     // a registered placement strategy
  Json params = Json::object();   // its parameters; a declared "workload" or "seed" parameter
                                  // gets the trace's workload and `seed` unless given
  uint64_t seed = 0;              // arrival order, resampling, random ties (and `random`'s seed)
  double stop_at = 1.3;           // arrived GPU requests / cluster GPUs at which arrivals stop
  double coverage = 0.95;         // share of pods the typical-pod workload covers
  OpenbTies ties = OpenbTies::kSeededOrder;
};

struct OpenbReplayResult {
  ClusterState cluster;            // the final state; nodes are added in tie order
  GpuWorkload workload;            // typical pods, used by fgd and for fragmentation
  int64_t gpu_capacity = 0;        // cluster GPUs, in core percent (100 per GPU)
  // One entry per arrival:
  std::vector<int32_t> pod;        // index into the input pods (resampled pods repeat an index)
  std::vector<int8_t> placed;      // 1 placed, 0 failed
  std::vector<int32_t> node;       // node row (index into the input nodes), -1 when failed
  std::vector<double> arrived;     // arrived GPU requests / capacity
  std::vector<double> allocated;   // allocated GPU share / capacity
  std::vector<double> fragmented;  // fragmented free GPU share / capacity
  std::vector<double> idle;        // free GPU share / capacity
  std::vector<int32_t> failed;     // failed pods so far
  std::vector<double> failed_gpu;  // GPU requests of failed pods so far / capacity
};

// Builds the cluster (GPUs of the node's model, 100 core percent each, nominal 16 GiB memory:
// memory is not a dimension of the study) and the pods, checking every row; an error names the
// row and field. Strategy errors (unknown policy, bad parameters) come back as they are.
absl::StatusOr<OpenbReplayResult> ReplayOpenb(const std::vector<OpenbNode>& nodes,
                                              const std::vector<OpenbPod>& pods,
                                              const OpenbReplayOptions& options);

// The conversions ReplayOpenb uses, for tests and other drivers.
absl::StatusOr<Node> OpenbNodeToNode(const OpenbNode& row);
absl::StatusOr<Pod> OpenbPodToPod(const OpenbPod& row);

}  // namespace gpufleet

#endif  // GPUFLEET_SIM_OPENB_REPLAY_H_
