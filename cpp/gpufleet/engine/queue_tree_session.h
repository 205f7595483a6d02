// A queue tree's view of one session (the queuetree plugin's state): the tree built from the
// session's queues, every task's amounts per tree resource (cpu, memory, gpu in whole-GPU
// equivalents, MIG kinds in instances, and the devices that DRA claims take per DeviceClass or
// mapped name, dra_ledger.h), what each queue's subtree holds and asks for, its
// fair share, and (drs) Kueue's quota accounting. Placements and releases during the session keep
// the totals current along one path (O(depth)).
#ifndef GPUFLEET_ENGINE_QUEUE_TREE_SESSION_H_
#define GPUFLEET_ENGINE_QUEUE_TREE_SESSION_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gpufleet/engine/session.h"
#include "gpufleet/queues/division.h"
#include "gpufleet/queues/kueue_quota.h"
#include "gpufleet/queues/queue_tree.h"
#include "gpufleet/queues/reclaim_rules.h"
#include "gpufleet/queues/usage_history.h"

namespace gpufleet::engine {

struct QueueTreeOptions {
  queues::DivisionPolicy policy = queues::DivisionPolicy::kKai;
  double k_value = 0;          // time-aware fairness: weight of past usage (0: off)
  queues::UsageParams usage;   // half-life and window of the usage history
  queues::ReclaimSettings reclaim;
};

class QueueTreeSession {
 public:
  // Builds the tree from the session's queues (ids are session queue ids). False when they do not
  // form a tree (the scheduler refuses such queues, so only hand-built sessions see it).
  bool Open(const Session& s, const QueueTreeOptions& options);
  // Totals, usage history and fair shares, once jobs are validated.
  void Ready(Session& s);
  void OnTaskEvent(const TaskInfo& task, double sign);

  const queues::QueueTree& tree() const { return *tree_; }
  int R() const { return tree_->num_resources(); }
  absl::Span<const double> amounts(int task) const {
    return absl::MakeConstSpan(task_amounts_).subspan(static_cast<size_t>(task) * R(), R());
  }
  double allocated(int q, int r) const { return allocated_[q * R() + r]; }
  double fair_share(int q, int r) const { return fair_share_[q * R() + r]; }
  const std::vector<double>& fair_shares() const { return fair_share_; }
  const std::vector<double>& usage() const { return usage_; }
  queues::KueueQuota* kueue() { return kueue_.get(); }
  queues::ReclaimJudge& judge() { return *judge_; }
  bool ready() const { return ready_; }
  const QueueTreeOptions& options() const { return options_; }

  // Queue order: compares the two queues just below the queues' common ancestor (priority, then
  // the lower saturation or, with drs, the lower DRS). <0 when a goes first.
  int Compare(int a, int b) const;
  // The queue holds its fair share in every resource.
  bool AtFairShare(int q) const;
  // Placing `amounts` in leaf q keeps it and its ancestors within their limits, and (drs) within
  // what Kueue's quota leaves it (its own unused quota and what its cohorts have available; a
  // queue whose cohort lent its quota away gets it back by treereclaim). "" or why not.
  std::string Admits(int q, absl::Span<const double> amounts) const;

 private:
  double Saturation(int q) const;
  // Queue order and overused read these per queue, kept current along the changed path.
  void Refresh(int q);

  QueueTreeOptions options_;
  std::optional<queues::QueueTree> tree_;
  std::vector<double> task_amounts_, allocated_, request_, capacity_, fair_share_, usage_;
  std::unique_ptr<queues::KueueQuota> kueue_;
  std::unique_ptr<queues::ReclaimJudge> judge_;
  queues::ShareDivider divider_;
  std::vector<int> task_queue_;
  std::vector<double> order_key_;   // saturation, or DRS with drs
  std::vector<char> at_fair_share_;
  bool ready_ = false;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_QUEUE_TREE_SESSION_H_
