// Kueue's quota accounting over a queue tree (its ClusterQueues are the leaves, its Cohorts the
// inner queues): per queue and resource
//   subtree quota  its nominal quota plus what its children lend it (their subtree quota less
//                  what their lending limit keeps back: their guaranteed quota);
//   usage          a leaf's usage is what it holds; a cohort's is what its children hold beyond
//                  their guaranteed quota (what they take from it);
//   available      what the queue could still take: its own unused guaranteed quota plus what its
//                  cohort has available, capped by its borrowing limit;
//   DRS            Dominant Resource Share: max over resources of (usage above subtree quota) /
//                  (the cohort's lendable quota), divided by the fair weight; 0 at the top and
//                  while nothing is borrowed, infinite for weight 0.
// Usage changes are applied along one path (O(depth)), as Kueue adds and removes workloads.
#ifndef GPUFLEET_QUEUES_KUEUE_QUOTA_H_
#define GPUFLEET_QUEUES_KUEUE_QUOTA_H_

#include <vector>

#include "absl/types/span.h"
#include "gpufleet/queues/queue_tree.h"

namespace gpufleet::queues {

class KueueQuota {
 public:
  explicit KueueQuota(const QueueTree& tree);

  // Adds (or with a negative amount removes) usage at leaf `q` and bubbles what exceeds each
  // queue's guaranteed quota up to its cohort.
  void AddUsage(int q, int r, double amount);
  void AddUsage(int q, absl::Span<const double> amounts, double sign = 1.0);

  double subtree_quota(int q, int r) const { return subtree_quota_[q * R_ + r]; }
  double guaranteed(int q, int r) const { return guaranteed_[q * R_ + r]; }
  double usage(int q, int r) const { return usage_[q * R_ + r]; }
  // What `q` could take now in resource r (may be negative after over-admission).
  double Available(int q, int r) const;
  // Whether `amounts` fit what `q` could take, in every resource the tree configures.
  bool Fits(int q, absl::Span<const double> amounts) const;
  // The queue's DRS with `extra` added to its usage (empty: as it is), as a fraction (Kueue
  // reports it in thousandths: 1000 x this, rounded down).
  double Drs(int q, absl::Span<const double> extra = {}) const;

 private:
  const QueueTree& tree_;
  int R_;
  std::vector<double> subtree_quota_, guaranteed_, usage_, lendable_;
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_KUEUE_QUOTA_H_
