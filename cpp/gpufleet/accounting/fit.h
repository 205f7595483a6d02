// The answer of a filter, as in the Kubernetes scheduler framework: infeasible is a result, not an
// error. kUnschedulableAndUnresolvable means no amount of freeing on this node would help.
#ifndef GPUFLEET_ACCOUNTING_FIT_H_
#define GPUFLEET_ACCOUNTING_FIT_H_

#include <map>
#include <string>

namespace gpufleet {

enum class FitCode { kOk = 0, kUnschedulable = 1, kUnschedulableAndUnresolvable = 2 };

struct FitResult {
  FitCode code = FitCode::kOk;
  std::string reason;
  bool ok() const { return code == FitCode::kOk; }
  static FitResult Ok() { return {}; }
  static FitResult Unschedulable(std::string r) { return {FitCode::kUnschedulable, std::move(r)}; }
  static FitResult Unresolvable(std::string r) {
    return {FitCode::kUnschedulableAndUnresolvable, std::move(r)};
  }
};

inline const char* FitCodeName(FitCode c) {
  switch (c) {
    case FitCode::kOk: return "Ok";
    case FitCode::kUnschedulable: return "Unschedulable";
    case FitCode::kUnschedulableAndUnresolvable: return "UnschedulableAndUnresolvable";
  }
  return "Ok";
}

// Why a pod fits nowhere, as kube-scheduler words it: "0/8 nodes are available: 3 Insufficient
// cpu, 5 Insufficient gpu devices" (`counts`: reason -> nodes; reasons in name order).
std::string NodesUnavailable(int total, const std::map<std::string, int>& counts);

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_FIT_H_
