// Whether a job of one queue may take resources from a running job of another queue of the same
// tree (reclaim), by the rules of the chosen fair-share policy, with two invariants that hold
// whatever the policy (docs/queues.md):
//   never below deserved  a victim is taken only while its queue, and every queue between it and
//                         the common ancestor, keeps at least its quota (deserved / nominal) and
//                         its guarantee in every resource the victim frees;
//   never above a limit   the reclaimer's queue and its ancestors stay within their limits, and
//                         (Kueue) within what their cohorts have once the victims are gone.
// The policy rule is judged between the two queues just below the common ancestor (the reclaimer
// side A and the victim side B, KAI's "leveled" queues and Kueue's almost-LCA):
//   kai       B holds more than max(quota, fair share) before the victim leaves (maintain fair
//             share), or A stays within its quota and B holds more than its quota (guarantee
//             deserved quota); the reclaimer's queue stays within its fair share, and A's
//             saturation (allocated / fair share) stays below B's after the move.
//   drs       Kueue's fair-sharing strategies: A's DRS with the reclaimer <= B's DRS without the
//             victim (LessThanOrEqualToFinalShare), or < B's DRS before (LessThanInitialShare);
//             the queue's reclaimWithinCohort setting, and borrowWithinCohort (a victim of lower
//             priority at or below the threshold) for a reclaimer that borrows.
//   capacity  the reclaimer's queue stays within its deserved amount (Volcano's capacity plugin).
// One ReclaimJudge serves one attempt: Begin, then Take for each victim in turn (victims already
// taken count as gone).
#ifndef GPUFLEET_QUEUES_RECLAIM_RULES_H_
#define GPUFLEET_QUEUES_RECLAIM_RULES_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gpufleet/queues/division.h"
#include "gpufleet/queues/kueue_quota.h"
#include "gpufleet/queues/queue_tree.h"

namespace gpufleet::queues {

enum class FairSharingStrategy { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

struct ReclaimSettings {
  DivisionPolicy policy = DivisionPolicy::kKai;
  double saturation_multiplier = 1.0;  // KAI: A's saturation x this must stay below B's
  std::vector<FairSharingStrategy> strategies = {
      FairSharingStrategy::kLessThanOrEqualToFinalShare,
      FairSharingStrategy::kLessThanInitialShare};
};

// The tree's state that the rules read (all per queue x resource, subtree totals).
struct TreeView {
  const QueueTree* tree = nullptr;
  absl::Span<const double> allocated;
  absl::Span<const double> fair_share;
  KueueQuota* kueue = nullptr;  // drs only: usage as Kueue counts it
};

class ReclaimJudge {
 public:
  ReclaimJudge(const TreeView& view, const ReclaimSettings& settings);
  // Points the judge at fresh arrays of the same tree (after they were reassigned).
  void SetView(const TreeView& view) { view_ = view; }
  // A reclaim for a job of leaf queue `reclaimer` that still needs `request`. Returns "" when the
  // reclaimer may reclaim at all, else why not.
  std::string Begin(int reclaimer, absl::Span<const double> request, int priority);
  // Whether a victim (a running job's task of leaf `queue`, holding `amounts`) may be taken now;
  // if so it counts as gone for the next questions. `why` (optional) says why not.
  bool Take(int queue, absl::Span<const double> amounts, int priority, std::string* why = nullptr);
  // Forget the victims taken so far (a new node, a new attempt).
  void ResetTaken();

 private:
  double Alloc(int q, int r) const;  // allocated less what was taken from q in this attempt
  double Floor(int q, int r) const;
  bool PolicyAllows(int a, int b, int queue, absl::Span<const double> amounts, int priority,
                    std::string* why) const;

  TreeView view_;
  ReclaimSettings settings_;
  int R_ = 0;
  int reclaimer_ = -1;
  int priority_ = 0;
  std::vector<double> request_;
  bool within_quota_ = false;  // the reclaimer's leaf stays within its quota (drs: nominal)
  bool borrows_ = false;       // drs: the reclaimer's leaf would borrow
  std::vector<double> taken_;  // per queue x resource, this attempt
  std::vector<int> touched_;
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_RECLAIM_RULES_H_
