// predicates: node selector and taints/tolerations (FitsNodeConstraints), then cpu, memory, pod
// count and per-device fit through the accounting's Filter: the same per-device code path as
// every other caller. Constraint answers do not change within a cycle, so they are cached per
// distinct selector/toleration set and node.
#include <cstdint>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

class Predicates : public Plugin {
 public:
  std::string name() const override { return "predicates"; }
  void OnSessionOpen(Session& s) override {
    s.AddPredicateFn(name(), [this, &s](const TaskInfo& t, int node) {
      std::vector<int8_t>& row = constraints_[t.constraint_key];
      if (row.empty()) row.assign(s.state().num_nodes(), -1);
      if (row[node] < 0) row[node] = FitsNodeConstraints(*t.pod, s.state().node(node)).ok();
      if (!row[node]) return FitsNodeConstraints(*t.pod, s.state().node(node));
      return s.state().Filter(*t.pod, node);
    });
  }

 private:
  absl::flat_hash_map<int, std::vector<int8_t>> constraints_;  // constraint key -> per node
};

GPUFLEET_REGISTER(Plugin,
    {.name = "predicates",
     .description = "node selector, taints/tolerations, cpu/memory/pods and per-device fit",
     .capabilities = {"predicates"}},
    [](const Params&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(new Predicates());
    });

}  // namespace
}  // namespace gpufleet::engine
