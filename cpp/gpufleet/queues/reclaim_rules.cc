#include "gpufleet/queues/reclaim_rules.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace gpufleet::queues {
namespace {

constexpr double kReclaimEps = 1e-9;

bool ExceedsBy(double a, double b) { return a > b + kReclaimEps * std::max(1.0, std::fabs(b)); }

double SaturationRatio(double allocated, double fair_share) {
  if (std::isinf(fair_share)) return 0;
  if (fair_share <= 0) return allocated > kReclaimEps ? kUnlimited : 0;
  return allocated / fair_share;
}

}  // namespace

ReclaimJudge::ReclaimJudge(const TreeView& view, const ReclaimSettings& settings)
    : view_(view), settings_(settings), R_(view.tree->num_resources()) {
  taken_.assign(static_cast<size_t>(view.tree->size()) * R_, 0.0);
}

double ReclaimJudge::Alloc(int q, int r) const {
  return view_.allocated[q * R_ + r] - taken_[q * R_ + r];
}

double ReclaimJudge::Floor(int q, int r) const {
  // Kueue: a cohort's own quota plus what its children lend it; the others: the queue's quota.
  const double quota = settings_.policy == DivisionPolicy::kDrs ? view_.kueue->subtree_quota(q, r)
                                                                : view_.tree->quota(q, r);
  return std::max(quota, view_.tree->guarantee(q, r));
}

void ReclaimJudge::ResetTaken() {
  for (int q : touched_)
    for (int r = 0; r < R_; ++r) taken_[q * R_ + r] = 0;
  touched_.clear();
}

std::string ReclaimJudge::Begin(int reclaimer, absl::Span<const double> request, int priority) {
  ResetTaken();
  const QueueTree& t = *view_.tree;
  reclaimer_ = reclaimer;
  priority_ = priority;
  request_.assign(request.begin(), request.end());
  request_.resize(R_, 0.0);
  borrows_ = false;
  switch (settings_.policy) {
    case DivisionPolicy::kKai:
      // KAI: a queue reclaims only what keeps it within its fair share.
      for (int r = 0; r < R_; ++r)
        if (ExceedsBy(Alloc(reclaimer, r) + request_[r], view_.fair_share[reclaimer * R_ + r]))
          return absl::StrFormat("queue %s would exceed its fair share of %s (%s)",
                                 t.name(reclaimer), t.resource_names()[r],
                                 FormatAmount(t.resource_names()[r],
                                              view_.fair_share[reclaimer * R_ + r]));
      break;
    case DivisionPolicy::kCapacity:
      for (int r = 0; r < R_; ++r)
        if (t.configured(r) && request_[r] > 0 &&
            ExceedsBy(Alloc(reclaimer, r) + request_[r], t.quota(reclaimer, r)))
          return absl::StrFormat("queue %s would exceed its deserved %s (%s)", t.name(reclaimer),
                                 t.resource_names()[r],
                                 FormatAmount(t.resource_names()[r], t.quota(reclaimer, r)));
      break;
    case DivisionPolicy::kDrs: {
      if (t.spec(reclaimer).quota.reclaim_within_cohort == CohortPreemption::kNever)
        return absl::StrFormat("queue %s does not reclaim within its cohort", t.name(reclaimer));
      const KueueQuota& kq = *view_.kueue;
      for (int r = 0; r < R_; ++r)
        if (t.configured(r) && request_[r] > 0 &&
            ExceedsBy(kq.usage(reclaimer, r) + request_[r], kq.subtree_quota(reclaimer, r)))
          borrows_ = true;
      break;
    }
  }
  return "";
}

bool ReclaimJudge::Take(int queue, absl::Span<const double> amounts, int priority,
                        std::string* why) {
  const QueueTree& t = *view_.tree;
  auto no = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  if (reclaimer_ < 0) return no("no reclaim begun");
  if (queue == reclaimer_) return no("same queue");
  const bool drs = settings_.policy == DivisionPolicy::kDrs;
  const int lca = t.CommonAncestor(reclaimer_, queue);
  if (drs && lca < 0) return no(absl::StrFormat("queue %s is in another cohort", t.name(queue)));
  const int level = lca < 0 ? 0 : t.depth(lca) + 1;
  const int a = t.AncestorAt(reclaimer_, level), b = t.AncestorAt(queue, level);
  for (int n = queue; n != lca; n = t.parent(n)) {
    if (!t.spec(n).reclaimable)
      return no(absl::StrFormat("queue %s is not reclaimable", t.name(n)));
    for (int r = 0; r < R_ && r < static_cast<int>(amounts.size()); ++r) {
      if (amounts[r] <= 0 || !t.configured(r)) continue;
      if (ExceedsBy(Floor(n, r), Alloc(n, r) - amounts[r]))
        return no(absl::StrFormat("queue %s would fall below its deserved %s (%s)", t.name(n),
                                  t.resource_names()[r],
                                  FormatAmount(t.resource_names()[r], Floor(n, r))));
    }
  }
  // Above the common ancestor the victim leaves and the reclaimer arrives: when a victim's gang
  // frees more than the reclaimer takes, those queues must not fall below their floor either.
  for (int n = lca; n >= 0; n = t.parent(n))
    for (int r = 0; r < R_ && r < static_cast<int>(amounts.size()); ++r) {
      if (amounts[r] <= request_[r] || !t.configured(r)) continue;
      const double after = Alloc(n, r) - amounts[r] + request_[r];
      if (ExceedsBy(Floor(n, r), after) && after < view_.allocated[n * R_ + r])
        return no(absl::StrFormat("queue %s would fall below its deserved %s (%s)", t.name(n),
                                  t.resource_names()[r],
                                  FormatAmount(t.resource_names()[r], Floor(n, r))));
    }
  if (!PolicyAllows(a, b, queue, amounts, priority, why)) return false;
  for (int n = queue; n >= 0; n = t.parent(n)) {
    bool fresh = true;
    for (int r = 0; r < R_; ++r) fresh = fresh && taken_[n * R_ + r] == 0;
    if (fresh) touched_.push_back(n);
    for (int r = 0; r < R_ && r < static_cast<int>(amounts.size()); ++r)
      taken_[n * R_ + r] += amounts[r];
  }
  return true;
}

bool ReclaimJudge::PolicyAllows(int a, int b, int queue, absl::Span<const double> amounts,
                                int priority, std::string* why) const {
  const QueueTree& t = *view_.tree;
  auto no = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  auto amount = [&](int r) { return r < static_cast<int>(amounts.size()) ? amounts[r] : 0.0; };
  switch (settings_.policy) {
    case DivisionPolicy::kKai: {
      bool maintain_fair_share = false, b_above_quota = false, a_within_quota = true;
      for (int r = 0; r < R_; ++r) {
        const double fs_b = view_.fair_share[b * R_ + r];
        const double allocatable_b = std::min(t.limit(b, r), std::max(t.quota(b, r), fs_b));
        if (amount(r) > 0) {
          maintain_fair_share |= ExceedsBy(Alloc(b, r), allocatable_b);
          b_above_quota |= t.configured(r) && ExceedsBy(Alloc(b, r), t.quota(b, r));
        }
        // Quotas bind only the resources the tree sets them for.
        a_within_quota = a_within_quota && (!t.configured(r) ||
                                            !ExceedsBy(Alloc(a, r) + request_[r], t.quota(a, r)));
      }
      if (!maintain_fair_share && !(a_within_quota && b_above_quota))
        return no(absl::StrFormat(
            "queue %s is within its fair share, and %s is not within its quota while %s is above "
            "its own",
            t.name(b), t.name(a), t.name(b)));
      // The reclaimer's side must stay less saturated than the victim's after the move.
      for (int r = 0; r < R_; ++r) {
        if (amount(r) <= 0 && request_[r] <= 0) continue;
        const double fs_a = view_.fair_share[a * R_ + r], fs_b = view_.fair_share[b * R_ + r];
        if (std::isinf(fs_a) && std::isinf(fs_b)) continue;
        const double ra = SaturationRatio(Alloc(a, r) + request_[r], fs_a);
        const double rb = SaturationRatio(Alloc(b, r) - amount(r), fs_b);
        if (ra > 1 && fs_b > 0 && ra * settings_.saturation_multiplier >= rb)
          return no(absl::StrFormat("queue %s would be more saturated than %s in %s", t.name(a),
                                    t.name(b), t.resource_names()[r]));
      }
      return true;
    }
    case DivisionPolicy::kCapacity:
      for (int r = 0; r < R_; ++r)
        if (t.configured(r) && request_[r] > 0 &&
            ExceedsBy(Alloc(a, r) + request_[r], t.quota(a, r)))
          return no(absl::StrFormat("queue %s would exceed its deserved %s", t.name(a),
                                    t.resource_names()[r]));
      return true;
    case DivisionPolicy::kDrs: {
      const CohortPreemption mode = t.spec(reclaimer_).quota.reclaim_within_cohort;
      if (mode == CohortPreemption::kLowerPriority && priority >= priority_)
        return no("reclaimWithinCohort LowerPriority: the victim's priority is not lower");
      const QuotaSpec& spec = t.spec(reclaimer_).quota;
      if (borrows_ && spec.borrow_within_cohort && priority < priority_ &&
          priority <= spec.borrow_priority_threshold)
        return true;
      const KueueQuota& kq = *view_.kueue;
      std::vector<double> before(R_), after(R_);
      for (int r = 0; r < R_; ++r) {
        before[r] = -taken_[b * R_ + r];
        after[r] = before[r] - amount(r);
      }
      const double drs_a = kq.Drs(a, request_);
      for (FairSharingStrategy s : settings_.strategies) {
        if (s == FairSharingStrategy::kLessThanOrEqualToFinalShare &&
            !ExceedsBy(drs_a, kq.Drs(b, after)))
          return true;
        if (s == FairSharingStrategy::kLessThanInitialShare && ExceedsBy(kq.Drs(b, before), drs_a))
          return true;
      }
      return no(absl::StrFormat("queue %s's share with the reclaimer (%g) is not below %s's",
                                t.name(a), drs_a, t.name(b)));
    }
  }
  return false;
}

}  // namespace gpufleet::queues
