// What one queue of a queue tree says about itself: its parent and, per resource, the quota
// vocabulary of the three systems gpufleet reads (docs/queues.md):
//   KAI Scheduler  quota (deserved), limit, overQuotaWeight; the queue's priority;
//   Kueue          nominalQuota (quota here), borrowingLimit, lendingLimit; fairSharing.weight
//                  (weight here); its preemption policy;
//   Volcano        deserved (quota here), capability (limit here), guarantee.
// Amounts are in the engine's units: cpu in milli-cores, memory in bytes, "gpu" in whole-GPU
// equivalents (a 50% share counts 0.5) and any other device kind ("mig-1g.10gb") in instances.
#ifndef GPUFLEET_QUEUES_QUEUE_SPEC_H_
#define GPUFLEET_QUEUES_QUEUE_SPEC_H_

#include <cstdint>
#include <limits>
#include <map>
#include <string>

namespace gpufleet::queues {

inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();

struct ResourceQuota {
  double quota = 0;                       // deserved / nominal; kUnlimited: KAI's -1
  double limit = kUnlimited;              // hard cap on what the queue's subtree holds
  double over_quota_weight = -1;          // KAI; < 0: the queue's weight
  double guarantee = 0;                   // never lent, never reclaimed below (Volcano)
  double borrowing_limit = kUnlimited;    // most it may borrow above its quota (Kueue)
  double lending_limit = kUnlimited;      // most of its quota its cohort may use (Kueue)
  bool operator==(const ResourceQuota&) const = default;
};

// How a queue's jobs may preempt jobs of other queues (Kueue's ClusterQueue preemption).
enum class CohortPreemption { kNever, kLowerPriority, kAny };

struct QuotaSpec {
  int priority = 0;      // KAI: over-quota resources go to higher priorities first
  int64_t creation = 0;  // older queues win rounding ties; 0: order of appearance
  std::map<std::string, ResourceQuota> resources;  // by resource name
  // Kueue: preempt in the cohort to reclaim nominal quota (Any by default, as with fair sharing),
  // and while borrowing only victims of lower priority at or below the threshold.
  CohortPreemption reclaim_within_cohort = CohortPreemption::kAny;
  bool borrow_within_cohort = false;
  int borrow_priority_threshold = std::numeric_limits<int>::max();
  bool empty() const { return resources.empty() && priority == 0; }
  bool operator==(const QuotaSpec&) const = default;
};

struct QueueSpec {
  std::string name;
  std::string parent;  // "" at the top
  double weight = 1;   // over-quota weight when a resource gives none; Kueue's fair weight
  bool reclaimable = true;
  QuotaSpec quota;
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_QUEUE_SPEC_H_
