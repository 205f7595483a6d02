// binpack: Volcano's binpack plugin. A node's score for a task is the weighted mean, over the
// resources the task requests and the plugin weighs, of (node used + request) / node capacity,
// times 100 and `binpack.weight`: the fuller the node would be, the better. A node where any
// weighed resource would overflow scores 0, as in Volcano. cpu and memory are always weighed
// (`binpack.cpu`, `binpack.memory`); further resources are listed in `binpack.resources`
// ("nvidia.com/gpu", counted in whole-GPU equivalents) with weights `binpack.resources.<name>`.
//   binpack(binpack.weight=10, binpack.cpu=1, binpack.memory=1,
//           binpack.resources="nvidia.com/gpu", binpack.resources.nvidia.com/gpu=5)
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

constexpr char kGpuWeight[] = "binpack.resources.nvidia.com/gpu";

struct BinpackWeights {
  int weight = 1;
  int cpu = 1;
  int memory = 1;
  int gpu = 0;  // 0: GPUs are not weighed (not listed in binpack.resources)
};

// Volcano's score for one resource: 0 when nothing is there or it does not count; an overflow
// makes the whole node score 0 (returned as a negative value).
double ResourceScore(double request, double used, double capacity, int weight) {
  if (capacity <= 0 || weight == 0) return 0;
  if (request + used > capacity) return -1;
  return (request + used) * weight / capacity;
}

class Binpack : public Plugin {
 public:
  explicit Binpack(BinpackWeights w) : w_(w) {}
  void OnSessionOpen(Session& s) override {
    if (w_.weight == 0) return;  // as Volcano: no node order at all
    s.AddNodeScoreFn(name(), [this, &s](const TaskInfo& t, int node) {
      return Score(*t.pod, *s.state().View(node).usage);
    });
  }

  double Score(const Pod& pod, const NodeUsage& u) const {
    double score = 0;
    int weights = 0;
    auto add = [&](double request, double used, double capacity, int weight) {
      if (request <= 0 || weight < 0) return true;  // not requested: not counted
      double r = ResourceScore(request, used, capacity, weight);
      if (r < 0) return false;
      score += r;
      weights += weight;
      return true;
    };
    if (!add(pod.cpu_milli, u.cpu_used, u.cpu_capacity, w_.cpu)) return 0;
    if (!add(pod.memory_bytes, u.memory_used, u.memory_capacity, w_.memory)) return 0;
    if (w_.gpu > 0 &&
        !add(pod.GpuShare(), u.gpu_core_used / 100.0, u.gpu_count, w_.gpu))
      return 0;
    if (weights > 0) score /= weights;
    return score * 100.0 * w_.weight;
  }

 private:
  BinpackWeights w_;
};

GPUFLEET_REGISTER(Plugin,
    {.name = "binpack",
     .description = "Volcano's binpack: prefer nodes that the task leaves fullest, by weighted "
                    "resources",
     .params = {{.name = "binpack.weight", .type = ParamType::kInt, .default_value = 1,
                 .help = "weight of the plugin's score", .range = {.at_least = 0}},
                {.name = "binpack.cpu", .type = ParamType::kInt, .default_value = 1,
                 .help = "weight of cpu", .range = {.at_least = 0}},
                {.name = "binpack.memory", .type = ParamType::kInt, .default_value = 1,
                 .help = "weight of memory", .range = {.at_least = 0}},
                {"binpack.resources", ParamType::kString, "",
                 "further resources to weigh, comma-separated (supported: nvidia.com/gpu)"},
                {.name = kGpuWeight, .type = ParamType::kInt,
                 .help = "weight of nvidia.com/gpu, which binpack.resources must list (1 if not "
                         "given)",
                 .range = {.at_least = 0}}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      BinpackWeights w;
      ASSIGN_OR_RETURN(w.weight, p.Get<int>("binpack.weight"));
      ASSIGN_OR_RETURN(w.cpu, p.Get<int>("binpack.cpu"));
      ASSIGN_OR_RETURN(w.memory, p.Get<int>("binpack.memory"));
      int gpu = 1;
      if (p.Has(kGpuWeight)) {
        ASSIGN_OR_RETURN(gpu, p.Get<int>(kGpuWeight));
      }
      bool gpu_listed = false;
      ASSIGN_OR_RETURN(std::string listed, p.Get<std::string>("binpack.resources"));
      for (absl::string_view r : absl::StrSplit(listed, ',', absl::SkipWhitespace())) {
        r = absl::StripAsciiWhitespace(r);
        if (r == kNvidiaGpu) {
          w.gpu = gpu;
          gpu_listed = true;
        } else if (r == "cpu" || r == "memory") {
          // Weighed already through binpack.cpu / binpack.memory (Volcano overrides them too).
        } else {
          return absl::InvalidArgumentError(absl::StrFormat(
              "binpack: binpack.resources lists \"%s\", which gpufleet does not schedule "
              "(supported: %s)", r, kNvidiaGpu));
        }
      }
      // Volcano ignores a weight whose resource is not listed; here it is a mistake to report.
      if (p.Has(kGpuWeight) && !gpu_listed)
        return absl::InvalidArgumentError(absl::StrFormat(
            "binpack: \"%s\" is given but binpack.resources does not list %s", kGpuWeight,
            kNvidiaGpu));
      return std::unique_ptr<Plugin>(new Binpack(w));
    });

}  // namespace
}  // namespace gpufleet::engine
