// predicates: node selector and taints/tolerations, then cpu, memory, pod count and per-device fit
// through the accounting's Filter: the same per-device code path as every other caller.
// Constraint answers do not change within a cycle, so they are cached per distinct
// selector/toleration set and node.
//
// Arguments are Volcano's (pkg/scheduler/plugins/predicates). predicate.NodeAffinityEnable and
// predicate.TaintTolerationEnable switch the two constraint checks off. The other switches name
// filters over what gpufleet's pods do not carry (host ports, inter-pod affinity, topology spread,
// volumes, dynamic resource claims), so both values are accepted and change nothing;
// predicate.CacheEnable is accepted too (answers are always cached within a cycle).
#include <cstdint>
#include <string>

#include "gpufleet/accounting/node_constraints.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"

namespace gpufleet::engine {
namespace {

constexpr char kNodeAffinity[] = "predicate.NodeAffinityEnable";
constexpr char kTaintToleration[] = "predicate.TaintTolerationEnable";

struct ConstraintChecks {
  bool node_selector = true;
  bool taints = true;
};

class Predicates : public Plugin {
 public:
  explicit Predicates(ConstraintChecks checks) : checks_(checks) {}
  void OnSessionOpen(Session& s) override {
    s.AddPredicateFn(name(), [this, &s](const TaskInfo& t, int node) {
      std::vector<int8_t>& row = constraints_[t.constraint_key];
      if (row.empty()) row.assign(s.state().num_nodes(), -1);
      if (row[node] < 0) row[node] = Constraints(*t.pod, s.state().node(node)).ok();
      if (!row[node]) return Constraints(*t.pod, s.state().node(node));
      return s.state().Filter(*t.pod, node);
    });
  }

 private:
  FitResult Constraints(const Pod& pod, const Node& node) const {
    if (checks_.node_selector) {
      FitResult r = MatchesNodeSelector(pod, node);
      if (!r.ok()) return r;
    }
    return checks_.taints ? ToleratesTaints(pod, node) : FitResult::Ok();
  }

  ConstraintChecks checks_;
  absl::flat_hash_map<int, std::vector<int8_t>> constraints_;  // constraint key -> per node
};

GPUFLEET_REGISTER(Plugin,
    {.name = "predicates",
     .description = "node selector, taints/tolerations, cpu/memory/pods and per-device fit",
     .params = {{kNodeAffinity, ParamType::kBool, true, "check the pod's node selector"},
                {kTaintToleration, ParamType::kBool, true, "check taints against tolerations"},
                {"predicate.CacheEnable", ParamType::kBool, false,
                 "accepted; constraint answers are always cached within a cycle"},
                {"predicate.NodePortsEnable", ParamType::kBool, true,
                 "accepted; pods carry no host ports"},
                {"predicate.PodAffinityEnable", ParamType::kBool, true,
                 "accepted; pods carry no inter-pod affinity"},
                {"predicate.PodTopologySpreadEnable", ParamType::kBool, true,
                 "accepted; pods carry no topology spread constraints"},
                {"predicate.NodeVolumeLimitsEnable", ParamType::kBool, true,
                 "accepted; pods carry no volumes"},
                {"predicate.VolumeZoneEnable", ParamType::kBool, true,
                 "accepted; pods carry no volumes"},
                {"predicate.VolumeBindingEnable", ParamType::kBool, true,
                 "accepted; pods carry no volumes"},
                {"predicate.DynamicResourceAllocationEnable", ParamType::kBool, false,
                 "accepted; pods carry no resource claims"}}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Plugin>> {
      ConstraintChecks checks;
      ASSIGN_OR_RETURN(checks.node_selector, p.Get<bool>(kNodeAffinity));
      ASSIGN_OR_RETURN(checks.taints, p.Get<bool>(kTaintToleration));
      return std::unique_ptr<Plugin>(new Predicates(checks));
    });

}  // namespace
}  // namespace gpufleet::engine
