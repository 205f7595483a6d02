// conformance: Volcano's conformance plugin. Critical pods are never victims of preempt or
// reclaim: pods in the kube-system namespace and pods of the system-critical priority classes.
// gpufleet names pods "namespace/name" and carries priorities as numbers, so a pod is critical
// when its name (or its job's) starts with "kube-system/", or when its priority or its job's is
// at least Kubernetes' SystemCriticalPriority (2000000000: system-cluster-critical, and
// system-node-critical above it).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

constexpr char kSystemNamespacePrefix[] = "kube-system/";
constexpr int64_t kSystemCriticalPriority = 2000000000;

bool IsCritical(const TaskInfo& t, const JobInfo& j) {
  return absl::StartsWith(t.pod->name, kSystemNamespacePrefix) ||
         absl::StartsWith(j.name(), kSystemNamespacePrefix) ||
         t.pod->priority >= kSystemCriticalPriority || j.priority() >= kSystemCriticalPriority;
}

class Conformance : public Plugin {
 public:
  void OnSessionOpen(Session& s) override {
    auto not_critical = [&s](const TaskInfo&, const std::vector<int>& candidates) {
      std::vector<int> out;
      for (int c : candidates)
        if (!IsCritical(s.task(c), s.job(s.task(c).job))) out.push_back(c);
      return out;
    };
    s.AddPreemptableFn(name(), not_critical);
    s.AddReclaimableFn(name(), not_critical);
  }
};

GPUFLEET_REGISTER(Plugin,
    {.name = "conformance",
     .description = "kube-system and system-critical pods are never preempted or reclaimed"},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(new Conformance());
    });

}  // namespace
}  // namespace gpufleet::engine
