// Fair shares: how much of each resource every queue of a tree is entitled to now, computed top
// down (the top queues divide the cluster, every queue's children divide its share), by one of
// three named policies:
//   "kai"       NVIDIA KAI Scheduler's division. Each queue first gets its quota (deserved), as
//               much as it asks for, even when the quotas add up to more than there is. What is
//               left goes to the highest over-quota priority first; within a priority, in rounds
//               by over-quota weight (time-aware: weight adjusted by decayed past usage with
//               k_value), in whole units, the parts left over by rounding one unit each to the
//               largest fraction (older queue on ties). Limits are never exceeded.
//   "drs"       Kueue's fair sharing: each queue first gets its nominal quota (with the quota its
//               children lend), then the rest is shared so that borrowing over lendable capacity
//               divided by weight (the Dominant Resource Share) comes out equal, within borrowing
//               limits. A resource no queue sets a quota for is not divided (unlimited).
//   "capacity"  Volcano's capacity plugin: deserved first, then what is left by weight (as
//               Volcano's proportion plugin water-fills), within capabilities.
// Nothing here allocates per call once a ShareDivider has run once on a tree of that size.
#ifndef GPUFLEET_QUEUES_DIVISION_H_
#define GPUFLEET_QUEUES_DIVISION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpufleet/queues/queue_tree.h"

namespace gpufleet::queues {

enum class DivisionPolicy { kKai, kDrs, kCapacity };
std::vector<std::string> DivisionPolicyNames();
absl::StatusOr<DivisionPolicy> ParseDivisionPolicy(const std::string& name);
const char* DivisionPolicyName(DivisionPolicy policy);

struct DivisionInput {
  const QueueTree* tree = nullptr;
  absl::Span<const double> capacity;  // per resource: what the cluster has
  absl::Span<const double> request;   // per queue x resource: what its subtree holds and wants
  // Per queue x resource: decayed past usage as a fraction of decayed capacity (time-aware
  // fairness, kai only); empty: none.
  absl::Span<const double> usage;
  double k_value = 0;  // how much past usage weighs (kai); 0 ignores usage
};

// One queue among siblings, for one resource (KAI's division; exposed for table tests).
struct KaiEntry {
  double deserved = 0;  // kUnlimited: as much as there is
  double request = 0;
  double limit = kUnlimited;
  double weight = 1;    // over-quota weight
  double usage = 0;     // normalized past usage
  int priority = 0;
  int order = 0;        // smaller = older (wins rounding ties)
  double fair_share = 0;  // in: what it already has; out: its share
};
// Gives each entry its deserved amount (capped by request and limit), then divides what is left
// over-quota. Returns what remains undivided (0 when deserved amounts exceed `total`).
double KaiDivide(double total, double k_value, std::vector<KaiEntry>& entries);
// The over-quota step alone (KAI's divideOverQuotaResource): divides `total` among entries that
// already hold `fair_share`. Returns what remains.
double KaiDivideOverQuota(double total, double k_value, std::vector<KaiEntry>& entries);

// Weighted water-filling of `total` over queues capped at `caps` (+inf allowed): every queue gets
// min(cap, level x weight) for one level; queues of weight 0 share equally what the others
// leave. Shares never exceed caps and add up to min(total, sum of caps).
void WaterFill(double total, absl::Span<const double> weights, absl::Span<const double> caps,
               std::vector<double>* out);

// Reusable scratch for dividing one tree many times (one per thread).
class ShareDivider {
 public:
  // Writes per queue x resource shares into `fair_share` (resized).
  void Divide(DivisionPolicy policy, const DivisionInput& in, std::vector<double>* fair_share);

 private:
  void DivideKai(const DivisionInput& in, std::vector<double>* fs);
  void DivideQuotaFirst(DivisionPolicy policy, const DivisionInput& in, std::vector<double>* fs);
  std::vector<KaiEntry> entries_;
  std::vector<double> weights_, caps_, firsts_, extra_, subtree_quota_, guaranteed_;
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_DIVISION_H_
