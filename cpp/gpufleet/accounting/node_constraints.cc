#include "gpufleet/accounting/node_constraints.h"

#include "absl/strings/str_format.h"

namespace gpufleet {

FitResult MatchesNodeSelector(const Pod& pod, const Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value)
      return FitResult::Unresolvable("node(s) didn't match Pod's node affinity/selector");
  }
  return FitResult::Ok();
}

FitResult ToleratesTaints(const Pod& pod, const Node& node) {
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

}  // namespace gpufleet
