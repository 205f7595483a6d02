// queuetree: hierarchical queues with the fair shares of KAI Scheduler ("kai"), Kueue ("drs") or
// Volcano's capacity plugin ("capacity"), computed top down every cycle (docs/queues.md).
//   queue order   between the two queues just below the common ancestor: higher priority, then
//                 the lower saturation (allocated / fair share; drs: the lower DRS);
//   overused      a queue holding its fair share in every resource;
//   allocatable   within the limits of the queue and its ancestors, and (drs) within Kueue's
//                 quota (its nominal quota, or what its cohort has available);
//   enqueueable   a job whose minimum could ever fit the limits on its path and the cluster;
//   reclaimable   victims by the tree's rules (queues/reclaim_rules.h): never below a queue's
//                 deserved amount, never a job that preempted the preemptor before (directly or
//                 in a chain: the preemption ledger);
//   preemptable   within a queue: lower job priority, never closing a preemption cycle.
// Time-aware fairness (kai): with k_value > 0, over-quota weights move with each queue's decayed
// past usage (usage_half_life, usage_window), kept across cycles by the scheduler.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/queue_tree_session.h"

namespace gpufleet::engine {
namespace {

class QueueTreePlugin : public Plugin {
 public:
  explicit QueueTreePlugin(QueueTreeOptions options) : options_(std::move(options)) {}

  void OnSessionOpen(Session& s) override {
    tree_opened_ = tree_.Open(s, options_);
    if (!tree_opened_) return;
    s.AddEventHandler(name(),
                      [this](const TaskInfo& t, double sign) { tree_.OnTaskEvent(t, sign); });
    s.AddQueueOrderFn(name(), [this](int a, int b) { return tree_.Compare(a, b); });
    s.AddOverusedFn(name(), [this](const QueueInfo& q) { return tree_.AtFairShare(q.id); });
    s.AddAllocatableFn(name(), [this](const QueueInfo& q, const TaskInfo& t) {
      return tree_.Admits(q.id, tree_.amounts(t.id)).empty();
    });
    s.AddEnqueueableFn(name(), [this, &s](const JobInfo& j) { return Enqueueable(s, j); });
    s.AddReclaimableFn(name(), [this, &s](const TaskInfo& p, const std::vector<int>& cands) {
      return Reclaimable(s, p, cands);
    });
    s.AddPreemptableFn(name(), [this, &s](const TaskInfo& p, const std::vector<int>& cands) {
      return Preemptable(s, p, cands);
    });
  }

  void OnSessionReady(Session& s) override {
    if (!opened()) return;
    absl::flat_hash_set<std::string> alive;
    for (const JobInfo& j : s.jobs()) alive.insert(j.name());
    s.queue_memory().ledger.Prune([&](const std::string& job) { return alive.contains(job); });
    tree_.Ready(s);
  }

  void OnSessionClose(Session& s) override {
    if (!opened()) return;
    SyncLedger(s);
    NameTreeRefusals(s);
  }

 private:
  bool opened() const { return tree_opened_; }

  // The actions say that a queue refused a task ("no quota left", "would exceed its
  // capability"); a job the tree still refuses also says which queue and resource (a tree's
  // resources include MIG kinds and DRA device classes, which the actions do not name).
  void NameTreeRefusals(Session& s) const {
    if (!tree_.ready()) return;
    for (JobInfo& j : s.jobs()) {
      if (!j.valid || j.reason.empty()) continue;
      for (int t : j.tasks) {
        if (s.task(t).status != TaskStatus::kPending) continue;
        const std::string why = tree_.Admits(j.queue, tree_.amounts(t));
        if (!why.empty() && j.reason.find(why) == std::string::npos) j.reason += "; " + why;
        break;
      }
    }
  }

  // Preemptions committed in this session join the ledger before the next question.
  void SyncLedger(Session& s) {
    const auto& done = s.preemptions();
    for (; synced_ < done.size(); ++synced_)
      s.queue_memory().ledger.Record(s.job(done[synced_].first).name(),
                                     s.job(done[synced_].second).name());
  }

  bool ClosesCycle(Session& s, const TaskInfo& preemptor, int victim_task) {
    SyncLedger(s);
    return s.queue_memory().ledger.WouldCycle(s.job(preemptor.job).name(),
                                              s.job(s.task(victim_task).job).name());
  }

  absl::Status Enqueueable(const Session& s, const JobInfo& j) const {
    if (!tree_.ready()) return absl::OkStatus();
    const queues::QueueTree& t = tree_.tree();
    std::vector<double> min(tree_.R(), 0.0);
    int counted = 0;
    for (int task : j.tasks) {
      if (counted++ >= j.min_available()) break;
      const auto a = tree_.amounts(task);
      for (int r = 0; r < tree_.R(); ++r) min[r] += a[r];
    }
    for (int n = j.queue; n >= 0; n = t.parent(n))
      for (int r = 0; r < tree_.R(); ++r)
        if (min[r] > t.limit(n, r) * (1 + 1e-12) + 1e-9)
          return absl::FailedPreconditionError(absl::StrFormat(
              "its minimum needs %s %s, above queue %s's limit of %s", t.resource_names()[r],
              queues::FormatAmount(t.resource_names()[r], min[r]), t.name(n),
              queues::FormatAmount(t.resource_names()[r], t.limit(n, r))));
    if (!j.min_request.LessEqual(s.total()))
      return absl::FailedPreconditionError(
          absl::StrFormat("its minimum (%s) exceeds the cluster (%s)", j.min_request.ToString(),
                          s.total().ToString()));
    return absl::OkStatus();
  }

  std::vector<int> Reclaimable(Session& s, const TaskInfo& p, const std::vector<int>& cands) {
    std::vector<int> out;
    if (!tree_.ready()) return out;
    const JobInfo& job = s.job(p.job);
    queues::ReclaimJudge& judge = tree_.judge();
    if (!judge.Begin(job.queue, tree_.amounts(p.id), job.priority()).empty()) return out;
    // A victim whose gang would break leaves whole (the action evicts the rest of its gang), so
    // the tree judges the whole job; later candidates of a job already taken come with it.
    absl::flat_hash_map<int, int> gone;  // job -> its tasks counted as gone
    absl::flat_hash_set<int> gone_tasks;
    std::vector<double> whole(tree_.R());
    for (int c : cands) {
      const JobInfo& victim = s.job(s.task(c).job);
      int& n = gone[victim.id];
      if (n >= victim.occupied || gone_tasks.contains(c)) {
        out.push_back(c);
        continue;
      }
      if (ClosesCycle(s, p, c)) continue;
      absl::Span<const double> amounts = tree_.amounts(c);
      const bool breaks = victim.occupied - n - 1 < victim.min_available();
      if (breaks) {
        std::fill(whole.begin(), whole.end(), 0.0);
        for (int t : victim.tasks)
          if (s.task(t).occupies() && !gone_tasks.contains(t))
            for (int r = 0; r < tree_.R(); ++r) whole[r] += tree_.amounts(t)[r];
        amounts = whole;
      }
      if (!judge.Take(victim.queue, amounts, victim.priority())) continue;
      if (breaks) {
        n = victim.occupied;
      } else {
        ++n;
        gone_tasks.insert(c);
      }
      out.push_back(c);
    }
    return out;
  }

  std::vector<int> Preemptable(Session& s, const TaskInfo& p, const std::vector<int>& cands) {
    std::vector<int> out;
    const int priority = s.job(p.job).priority();
    for (int c : cands)
      if (s.job(s.task(c).job).priority() < priority && !ClosesCycle(s, p, c)) out.push_back(c);
    return out;
  }

  QueueTreeOptions options_;
  QueueTreeSession tree_;
  bool tree_opened_ = false;
  size_t synced_ = 0;
};

absl::StatusOr<std::unique_ptr<Plugin>> MakeQueueTree(const Params& p) {
  QueueTreeOptions o;
  ASSIGN_OR_RETURN(std::string policy, p.Get<std::string>("policy"));
  ASSIGN_OR_RETURN(o.policy, queues::ParseDivisionPolicy(policy));
  ASSIGN_OR_RETURN(o.k_value, p.Get<double>("k_value"));
  ASSIGN_OR_RETURN(o.usage.half_life, p.Get<double>("usage_half_life"));
  ASSIGN_OR_RETURN(o.usage.window, p.Get<double>("usage_window"));
  ASSIGN_OR_RETURN(o.reclaim.saturation_multiplier, p.Get<double>("saturation_multiplier"));
  RETURN_IF_ERROR(o.usage.Check());
  const Json& strategies = p.json()["strategies"];
  if (!strategies.is_array() || strategies.empty())
    return absl::InvalidArgumentError(
        "queuetree: strategies must be a non-empty list of LessThanOrEqualToFinalShare, "
        "LessThanInitialShare");
  o.reclaim.strategies.clear();
  for (const Json& name : strategies) {
    if (name == "LessThanOrEqualToFinalShare")
      o.reclaim.strategies.push_back(queues::FairSharingStrategy::kLessThanOrEqualToFinalShare);
    else if (name == "LessThanInitialShare")
      o.reclaim.strategies.push_back(queues::FairSharingStrategy::kLessThanInitialShare);
    else
      return absl::InvalidArgumentError(absl::StrFormat(
          "queuetree: unknown strategy %s (LessThanOrEqualToFinalShare, LessThanInitialShare)",
          name.dump()));
  }
  o.reclaim.policy = o.policy;
  return std::unique_ptr<Plugin>(new QueueTreePlugin(std::move(o)));
}

GPUFLEET_REGISTER(Plugin,
    {.name = "queuetree",
     .description = "hierarchical queues: KAI, Kueue (DRS) or Volcano capacity fair shares, "
                    "reclaim that never goes below deserved nor closes a preemption cycle",
     .params = {{.name = "policy", .type = ParamType::kString, .default_value = "kai",
                 .help = "fair-share policy", .one_of = {"kai", "drs", "capacity"}},
                {.name = "k_value", .type = ParamType::kNumber, .default_value = 0.0,
                 .help = "time-aware fairness: how much decayed past usage moves over-quota "
                         "weights (kai; 0 off)",
                 .range = {.at_least = 0.0, .finite = true}},
                {"usage_half_life", ParamType::kNumber, 0.0,
                 "seconds for past usage to count half (0: no decay)"},
                {"usage_window", ParamType::kNumber, 0.0, "seconds of past usage kept (0: all)"},
                {.name = "saturation_multiplier", .type = ParamType::kNumber, .default_value = 1.0,
                 .help = "kai reclaim: the reclaimer's saturation times this must stay below "
                         "the victim's",
                 .range = {.at_least = 1.0, .finite = true}},
                {"strategies", ParamType::kAny,
                 Json::array({"LessThanOrEqualToFinalShare", "LessThanInitialShare"}),
                 "drs reclaim: Kueue's fair-sharing preemption strategies, in order"}}},
    MakeQueueTree);

}  // namespace
}  // namespace gpufleet::engine
