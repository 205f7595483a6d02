#include "gpufleet/sim/openb_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/strategies/gpu_share.h"
#include "gpufleet/placement/observer.h"
#include "gpufleet/placement/placer.h"

namespace gpufleet {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// memory_mib * kMiB must not overflow int64 (hand-built frames can hold anything).
constexpr int64_t kMaxMemoryMib = std::numeric_limits<int64_t>::max() / kMiB;
constexpr int64_t kNominalGpuMemory = int64_t{16} << 30;  // GPU memory is not a dimension here
constexpr int64_t kMaxPods = 1 << 20;                      // the study has no pod-count limit

// Uniform integer in [0, n) by rejection, so sequences do not depend on the standard library's
// distribution implementation.
uint64_t Uniform(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Uniform(rng, i)]);
}

absl::StatusOr<std::unique_ptr<PlacementStrategy>> BuildStrategy(const OpenbReplayOptions& o,
                                                                 const GpuWorkload& workload) {
  if (!o.params.is_object() && !o.params.is_null())
    return absl::InvalidArgumentError("replay: policy parameters must be an object");
  Json p = o.params.is_null() ? Json::object() : o.params;
  // The replay knows the trace's workload and the run's seed: any strategy that declares a
  // "workload" or "seed" parameter gets them unless the caller gave its own.
  const Registry<PlacementStrategy>& registry = Registry<PlacementStrategy>::Global();
  auto found = registry.Info(o.policy);
  if (!found.ok()) return registry.Create(o.policy, p);  // its error lists the known names
  const auto& info = *found;
  if (info.FindParam("workload") != nullptr && !p.contains("workload"))
    p["workload"] = workload.ToJson();
  if (info.FindParam("seed") != nullptr && !p.contains("seed")) p["seed"] = o.seed;
  return registry.Create(o.policy, p);
}

// What Filter and the strategies read from a pod: its requests and allowed models.
std::string ShapeKey(const Pod& p) {
  std::string key = absl::StrCat(p.cpu_milli, ",", p.memory_bytes, ",", static_cast<int>(p.scope));
  for (const DeviceRequest& r : p.devices)
    absl::StrAppend(&key, ";", r.type, ",", r.count, ",", r.core, ",", r.memory_bytes, ",",
                    r.memory_ratio);
  absl::StrAppend(&key, "|", absl::StrJoin(p.gpu_models, "|"));
  return key;
}

}  // namespace

absl::StatusOr<Node> OpenbNodeToNode(const OpenbNode& row) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("node %s: %s %s", row.name, field, why));
  };
  if (row.cpu_milli < 0) return bad("cpu_milli", "is negative");
  if (row.memory_mib < 0) return bad("memory_mib", "is negative");
  if (row.memory_mib > kMaxMemoryMib)
    return bad("memory_mib", absl::StrFormat("is %d; at most %d (bytes must fit in 64 bits)",
                                             row.memory_mib, kMaxMemoryMib));
  if (row.num_gpu < 0) return bad("num_gpu", "is negative");
  if (row.num_gpu > GpuSlots::kMaxGpus)
    return bad("num_gpu", absl::StrFormat("is %d; at most %d GPUs per node", row.num_gpu,
                                          GpuSlots::kMaxGpus));
  Node n;
  n.name = row.name;
  n.cpu_milli = row.cpu_milli;
  n.memory_bytes = row.memory_mib * kMiB;
  n.max_pods = kMaxPods;
  for (int i = 0; i < row.num_gpu; ++i) {
    Device d;
    d.type = kGpu;
    d.minor = i;
    d.model = row.model;
    d.core = 100;
    d.memory_bytes = kNominalGpuMemory;
    n.devices.push_back(std::move(d));
  }
  return n;
}

absl::StatusOr<Pod> OpenbPodToPod(const OpenbPod& row) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("pod %s: %s %s", row.name, field, why));
  };
  if (row.name.empty()) return absl::InvalidArgumentError("pod with an empty name");
  if (row.cpu_milli < 0) return bad("cpu_milli", "is negative");
  if (row.memory_mib < 0) return bad("memory_mib", "is negative");
  if (row.memory_mib > kMaxMemoryMib)
    return bad("memory_mib", absl::StrFormat("is %d; at most %d (bytes must fit in 64 bits)",
                                             row.memory_mib, kMaxMemoryMib));
  if (row.num_gpu < 0) return bad("num_gpu", "is negative");
  if (row.num_gpu == 0 && row.gpu_milli != 0)
    return bad("gpu_milli", absl::StrFormat("is %d but num_gpu is 0", row.gpu_milli));
  if (row.num_gpu == 1 && (row.gpu_milli < 10 || row.gpu_milli > 1000 || row.gpu_milli % 10 != 0))
    return bad("gpu_milli",
               absl::StrFormat("is %d; a one-GPU pod needs a multiple of 10 in 10-1000",
                               row.gpu_milli));
  if (row.num_gpu > 1 && row.gpu_milli != 1000)
    return bad("gpu_milli", absl::StrFormat("is %d but num_gpu is %d (multi-GPU pods take whole "
                                            "GPUs: 1000)", row.gpu_milli, row.num_gpu));
  Pod p;
  p.name = row.name;
  p.cpu_milli = row.cpu_milli;
  p.memory_bytes = row.memory_mib * kMiB;
  p.gpu_models = row.gpu_spec;
  if (row.num_gpu > 0) {
    DeviceRequest r;
    r.type = kGpu;
    r.count = row.num_gpu;
    r.core = row.gpu_milli / 10;
    // A whole GPU takes its memory too; a share is GPU core only (the study's single dimension).
    r.memory_ratio = row.gpu_milli == 1000 ? 100 : 0;
    p.devices.push_back(r);
  }
  return p;
}

absl::StatusOr<OpenbReplayResult> ReplayOpenb(const std::vector<OpenbNode>& nodes,
                                              const std::vector<OpenbPod>& pods,
                                              const OpenbReplayOptions& o) {
  // Bounded: arrivals are kept per row, and a huge stop_at would draw without end.
  constexpr double kMaxStopAt = 100;
  if (!(o.stop_at > 0.0 && o.stop_at <= kMaxStopAt))
    return absl::InvalidArgumentError(absl::StrFormat(
        "replay: stop_at must be > 0 and at most %g (times the cluster's GPUs), got %g", kMaxStopAt,
        o.stop_at));
  if (!(o.coverage > 0.0 && o.coverage <= 1.0))
    return absl::InvalidArgumentError(
        absl::StrFormat("replay: coverage must be in (0, 1], got %g", o.coverage));
  OpenbReplayResult out;
  ClusterState& cluster = out.cluster;
  cluster.set_clock([] { return int64_t{1}; });  // assume times carry no meaning here
  // Every row is checked in input order first, so an error names the first bad row.
  std::vector<Node> converted;
  converted.reserve(nodes.size());
  absl::flat_hash_set<std::string> node_names;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto node = OpenbNodeToNode(nodes[i]);
    absl::Status s = node.ok() ? ValidateNode(*node) : node.status();
    if (s.ok() && !node_names.insert(node->name).second)
      s = absl::AlreadyExistsError(absl::StrFormat("node %s already exists", node->name));
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("node row ", i, ": ", s.message()));
    converted.push_back(*std::move(node));
  }
  std::vector<Pod> trace;
  std::vector<ShareTask> tasks;
  std::vector<int> shape_of;  // pods with equal requests share a shape (the Placer's numbered shapes)
  absl::flat_hash_map<std::string, int> shapes;
  trace.reserve(pods.size());
  absl::flat_hash_set<std::string> names;
  int64_t trace_core = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    auto pod = OpenbPodToPod(pods[i]);
    if (!pod.ok())
      return absl::InvalidArgumentError(absl::StrCat("pod row ", i, ": ", pod.status().message()));
    if (!names.insert(pod->name).second)
      return absl::InvalidArgumentError(
          absl::StrCat("pod row ", i, ": name ", pod->name, " appears twice"));
    tasks.push_back(TaskOf(*pod));
    trace_core += tasks.back().total_core();
    shape_of.push_back(shapes.try_emplace(ShapeKey(*pod), static_cast<int>(shapes.size()))
                           .first->second);
    trace.push_back(*std::move(pod));
  }
  for (const Node& n : converted)
    for (const Device& d : n.devices) out.gpu_capacity += d.type == kGpu ? 100 : 0;
  if (out.gpu_capacity == 0) return absl::InvalidArgumentError("replay: the cluster has no GPUs");
  out.workload = GpuWorkload::FromTasks(tasks, o.coverage);
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementStrategy> strategy, BuildStrategy(o, out.workload));
  auto* observer = dynamic_cast<PlacementObserver*>(strategy.get());

  // Arrival order: the trace shuffled, then draws with replacement up to stop_at x capacity.
  std::mt19937_64 rng(o.seed);
  std::vector<int32_t> order(trace.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  Shuffle(order, rng);
  const double target = o.stop_at * static_cast<double>(out.gpu_capacity);
  std::vector<int32_t> arrivals;
  double demand = 0.0;
  for (int32_t i : order) {
    if (demand + tasks[i].total_core() > target) break;
    demand += tasks[i].total_core();
    arrivals.push_back(i);
  }
  if (arrivals.size() == trace.size() && trace_core > 0) {
    while (true) {
      int32_t i = static_cast<int32_t>(Uniform(rng, trace.size()));
      if (demand + tasks[i].total_core() > target) break;
      demand += tasks[i].total_core();
      arrivals.push_back(i);
    }
  }

  // Tie order. The nodes enter the cluster in it, so "the first node with the best score" (the
  // Placer's rule) is the study's rule, and the Placer's per-shape score cache stays usable.
  std::vector<int32_t> row_of(converted.size());  // node index -> input row
  for (size_t i = 0; i < row_of.size(); ++i) row_of[i] = static_cast<int32_t>(i);
  std::sort(row_of.begin(), row_of.end(),
            [&](int32_t a, int32_t b) { return converted[a].name < converted[b].name; });
  if (o.ties == OpenbTies::kSeededOrder) {
    // The study's simulator sorts the nodes by name, then draws a permutation and prefixes each
    // name with its rank in it: node k by name comes rank[k]-th.
    std::vector<int32_t> rank(row_of.size());
    for (size_t i = 0; i < rank.size(); ++i) rank[i] = static_cast<int32_t>(i);
    Shuffle(rank, rng);
    std::vector<int32_t> by_rank(row_of.size());
    for (size_t k = 0; k < rank.size(); ++k) by_rank[rank[k]] = row_of[k];
    row_of = std::move(by_rank);
  }
  for (int32_t row : row_of) {
    absl::Status s = cluster.AddNode(converted[row]);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("node row ", row, ": ", s.message()));
  }

  // Per-node fragmentation, updated only where a pod lands.
  std::vector<double> node_frag(cluster.num_nodes());
  double frag = 0.0;
  auto node_fragmentation = [&](int i) {
    NodeView v = cluster.View(i);
    return out.workload.empty() ? 0.0 : out.workload.Fragmentation(v, SlotsOf(v), CpuLeft(v));
  };
  for (int i = 0; i < cluster.num_nodes(); ++i) {
    node_frag[i] = node_fragmentation(i);
    frag += node_frag[i];
  }
  double idle = static_cast<double>(out.gpu_capacity);
  const size_t n = arrivals.size();
  out.pod.reserve(n);
  out.placed.reserve(n);
  out.node.reserve(n);
  out.arrived.reserve(n);
  out.allocated.reserve(n);
  out.fragmented.reserve(n);
  out.idle.reserve(n);
  out.failed.reserve(n);
  out.failed_gpu.reserve(n);
  const double cap = static_cast<double>(out.gpu_capacity);
  // Random ties: the candidates in a fresh random order for every pod (Place gives ties to the
  // earliest candidate). Otherwise ties go to the earliest node in index order, which lets the
  // Placer keep every shape's scores of the nodes that did not change (the shape's number keys
  // its score table). Failures are only counted, so no reason is worded.
  std::vector<int> all(cluster.num_nodes()), candidates;
  for (int i = 0; i < cluster.num_nodes(); ++i) all[i] = i;
  std::vector<int> uses(trace.size(), 0);
  Placer placer;
  double arrived = 0.0, allocated = 0.0, failed_gpu = 0.0;
  int32_t failed = 0;
  for (int32_t i : arrivals) {
    Pod pod = trace[i];
    if (uses[i]++ > 0) pod.name = absl::StrCat(pod.name, "#", uses[i] - 1);
    const double need = static_cast<double>(tasks[i].total_core());
    arrived += need;
    PlacementQuery query{.pod = pod, .strategy = *strategy, .reason = false, .observer = observer};
    int where = -1;
    if (o.ties == OpenbTies::kRandom) {
      Shuffle(all, rng);
      candidates.clear();
      for (int k : all)
        if (QuickMayFit(pod, cluster.usage(k))) candidates.push_back(k);
      query.candidates = &candidates;
      if (!candidates.empty()) where = placer.Place(cluster, query).node;
    } else {
      query.shape = shape_of[i];
      where = placer.Place(cluster, query).node;
    }
    if (where >= 0) {
      allocated += need;
      idle -= need;
      frag -= node_frag[where];
      node_frag[where] = node_fragmentation(where);
      frag += node_frag[where];
    } else {
      ++failed;
      failed_gpu += need;
    }
    out.pod.push_back(i);
    out.placed.push_back(where >= 0 ? 1 : 0);
    out.node.push_back(where >= 0 ? row_of[where] : -1);
    out.arrived.push_back(arrived / cap);
    out.allocated.push_back(allocated / cap);
    out.fragmented.push_back(std::max(0.0, frag) / cap);
    out.idle.push_back(idle / cap);
    out.failed.push_back(failed);
    out.failed_gpu.push_back(failed_gpu / cap);
  }
  return out;
}

}  // namespace gpufleet
