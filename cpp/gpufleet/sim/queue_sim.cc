#include "gpufleet/sim/queue_sim.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gpufleet/queues/kueue_quota.h"
#include "gpufleet/queues/preemption_ledger.h"

namespace gpufleet::sim {
namespace {

using queues::kGpu;

enum class State { kFuture, kPending, kRunning, kDone };

struct Record {
  State state = State::kFuture;
  double remaining = 0;  // seconds of running left
  double run_start = 0;
  uint32_t version = 0;
};

struct Finish {
  double time;
  int job;
  uint32_t version;
  bool operator>(const Finish& o) const { return time != o.time ? time > o.time : job > o.job; }
};

class QueueRun {
 public:
  QueueRun(const queues::QueueTree& tree, int gpus, const std::vector<QueueSimJob>& jobs,
           const QueueSimOptions& options)
      : tree_(tree), jobs_(jobs), options_(options), R_(tree.num_resources()), free_(gpus) {
    records_.resize(jobs.size());
    pending_.resize(tree.size());
    running_.resize(tree.size());
    allocated_.assign(static_cast<size_t>(tree.size()) * R_, 0.0);
    request_ = allocated_;
    capacity_.assign(R_, 0.0);
    capacity_[kGpu] = gpus;
    names_.resize(tree.size());
    for (int q = 0; q < tree.size(); ++q) names_[q] = tree.name(q);
    if (options.policy == queues::DivisionPolicy::kDrs)
      kueue_ = std::make_unique<queues::KueueQuota>(tree);
    judge_ = std::make_unique<queues::ReclaimJudge>(
        queues::TreeView{&tree_, allocated_, fair_share_, kueue_.get()}, options.reclaim);
    result_.jobs.resize(jobs.size());
  }

  absl::StatusOr<QueueSimResult> Go() {
    std::vector<int> order(jobs_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return jobs_[a].submit_time < jobs_[b].submit_time;
    });
    size_t next = 0;
    size_t done = 0;
    const double origin = order.empty() ? 0.0 : jobs_[order[0]].submit_time;
    double last_sample = -std::numeric_limits<double>::infinity();
    while (done < jobs_.size()) {
      const double t_arrival = next < order.size() ? jobs_[order[next]].submit_time : kNever;
      double t = std::min(t_arrival, NextFinish());
      if (t == kNever)
        return absl::FailedPreconditionError(StuckMessage());
      if (options_.interval > 0) t = std::ceil(t / options_.interval - 1e-12) * options_.interval;
      // Completions, then arrivals, up to t.
      // Finishes within a relative 1e-9 of t, measured from the first arrival (not from 0, so
      // Unix-second clocks keep sub-millisecond resolution), count as at t.
      while (NextFinish() <= t + 1e-9 * std::max(1.0, t - origin)) {
        const Finish f = finishes_.top();
        finishes_.pop();
        Stop(f.job, f.time, /*preempted=*/false);
        records_[f.job].state = State::kDone;
        result_.jobs[f.job].end = f.time;
        ++done;
      }
      while (next < order.size() && jobs_[order[next]].submit_time <= t) {
        const int j = order[next++];
        records_[j].state = State::kPending;
        records_[j].remaining = jobs_[j].duration;
        AddPending(j);
      }
      Schedule(t);
      ++result_.scheduling_points;
      if (options_.sample_every <= 0 || t >= last_sample + options_.sample_every) {
        Sample(t);
        last_sample = t;
      }
    }
    return std::move(result_);
  }

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();
  using PendingKey = std::tuple<int, double, int>;   // -priority, submit time, job
  using RunningKey = std::tuple<int, double, int>;   // priority, -start, job: victims first

  std::vector<double> Gpus(int n) const {
    std::vector<double> v(R_, 0.0);
    v[kGpu] = n;
    return v;
  }

  double NextFinish() {
    while (!finishes_.empty()) {
      const Finish& f = finishes_.top();
      if (records_[f.job].state == State::kRunning && records_[f.job].version == f.version)
        return f.time;
      finishes_.pop();
    }
    return kNever;
  }

  void AddPending(int j) {
    pending_[jobs_[j].queue].insert({-jobs_[j].priority, jobs_[j].submit_time, j});
    queues::AddAlongPath(tree_, jobs_[j].queue, Gpus(jobs_[j].num_gpu), 1, &request_);
  }

  void Start(int j, double t) {
    const QueueSimJob& job = jobs_[j];
    Record& r = records_[j];
    pending_[job.queue].erase({-job.priority, job.submit_time, j});
    r.state = State::kRunning;
    r.run_start = t;
    ++r.version;
    running_[job.queue].insert({job.priority, -t, j});
    const std::vector<double> g = Gpus(job.num_gpu);
    queues::AddAlongPath(tree_, job.queue, g, 1, &allocated_);
    if (kueue_) kueue_->AddUsage(job.queue, g);
    free_ -= job.num_gpu;
    if (result_.jobs[j].start < 0) result_.jobs[j].start = t;
    finishes_.push({t + r.remaining, j, r.version});
  }

  // A running job stops: it finished, or it was preempted (back to pending, progress kept).
  void Stop(int j, double t, bool preempted) {
    const QueueSimJob& job = jobs_[j];
    Record& r = records_[j];
    running_[job.queue].erase({job.priority, -r.run_start, j});
    const std::vector<double> g = Gpus(job.num_gpu);
    queues::AddAlongPath(tree_, job.queue, g, -1, &allocated_);
    queues::AddAlongPath(tree_, job.queue, g, -1, &request_);
    if (kueue_) kueue_->AddUsage(job.queue, g, -1);
    free_ += job.num_gpu;
    ++r.version;
    if (preempted) {
      r.remaining = std::max(0.0, r.remaining - (t - r.run_start));
      r.state = State::kPending;
      ++result_.jobs[j].preemptions;
      ++result_.preemptions;
      AddPending(j);
    }
  }

  // Whether n more GPUs in leaf q stay within every limit on its path and (drs) Kueue's quota.
  bool Admits(int q, int n) const {
    for (int a = q; a >= 0; a = tree_.parent(a))
      if (allocated_[a * R_ + kGpu] + n > tree_.limit(a, kGpu) + 1e-9) return false;
    return !kueue_ || kueue_->Fits(q, Gpus(n));
  }

  double Saturation(int q) const {
    const double fs = fair_share_[q * R_ + kGpu], a = allocated_[q * R_ + kGpu];
    if (std::isinf(fs)) return 0;
    return fs > 0 ? a / fs : (a > 0 ? 1e18 : 0.0);
  }

  // Queue order between two leaves, judged just below their common ancestor.
  bool Before(int a, int b) const {
    const int lca = tree_.CommonAncestor(a, b);
    const int level = lca < 0 ? 0 : tree_.depth(lca) + 1;
    const int x = tree_.AncestorAt(a, level), y = tree_.AncestorAt(b, level);
    if (x != y) {
      if (tree_.priority(x) != tree_.priority(y)) return tree_.priority(x) > tree_.priority(y);
      const double sx = kueue_ ? kueue_->Drs(x) : Saturation(x);
      const double sy = kueue_ ? kueue_->Drs(y) : Saturation(y);
      if (std::fabs(sx - sy) > 1e-12) return sx < sy;
    }
    return tree_.Older(a, b);
  }

  // The first of a leaf's first few pending jobs that can start now, or -1.
  int Startable(int q) const {
    int seen = 0;
    for (const auto& [np, submit, j] : pending_[q]) {
      if (++seen > 16) break;
      if (jobs_[j].num_gpu <= free_ && Admits(q, jobs_[j].num_gpu)) return j;
    }
    return -1;
  }

  void Schedule(double t) {
    if (options_.k_value > 0) {
      usage_history_.Advance(t, names_, R_, allocated_, capacity_, options_.usage);
      usage_history_.Normalized(names_, R_, t, options_.usage, &usage_);
    }
    divider_.Divide(options_.policy, {&tree_, capacity_, request_, usage_, options_.k_value},
                    &fair_share_);
    judge_->SetView({&tree_, allocated_, fair_share_, kueue_.get()});
    StartWhatFits(t);
    if (!options_.preempt) return;
    std::vector<int> leaves;
    for (int q = 0; q < tree_.size(); ++q)
      if (tree_.leaf(q) && !pending_[q].empty()) leaves.push_back(q);
    std::sort(leaves.begin(), leaves.end(), [&](int a, int b) { return Before(a, b); });
    bool any = false;
    for (int q : leaves)
      while (!pending_[q].empty() && Reclaim(q, std::get<2>(*pending_[q].begin()), t)) any = true;
    if (any) StartWhatFits(t);
  }

  void StartWhatFits(double t) {
    while (free_ > 0) {
      int best = -1, job = -1;
      for (int q = 0; q < tree_.size(); ++q) {
        if (!tree_.leaf(q) || pending_[q].empty()) continue;
        const int j = Startable(q);
        if (j >= 0 && (best < 0 || Before(q, best))) best = q, job = j;
      }
      if (best < 0) return;
      Start(job, t);
    }
  }

  // Job j of leaf q takes GPUs from other queues by the tree's rules; true if it started.
  bool Reclaim(int q, int j, double t) {
    const QueueSimJob& job = jobs_[j];
    if (!judge_->Begin(q, Gpus(job.num_gpu), job.priority).empty()) return false;
    // Candidates: the most saturated queues first, their lowest-priority, latest jobs first.
    std::vector<int> donors;
    for (int v = 0; v < tree_.size(); ++v)
      if (v != q && tree_.leaf(v) && !running_[v].empty()) donors.push_back(v);
    std::sort(donors.begin(), donors.end(),
              [&](int a, int b) { return Saturation(a) > Saturation(b); });
    const std::string me = std::to_string(jobs_[j].id);
    std::vector<int> victims;
    int freed = free_;
    for (int v : donors) {
      for (const auto& [prio, neg_start, k] : running_[v]) {
        if (freed >= job.num_gpu) break;
        if (ledger_.WouldCycle(me, std::to_string(jobs_[k].id))) continue;
        if (!judge_->Take(v, Gpus(jobs_[k].num_gpu), prio)) continue;
        victims.push_back(k);
        freed += jobs_[k].num_gpu;
      }
      if (freed >= job.num_gpu) break;
    }
    if (freed < job.num_gpu) return false;
    for (int k : victims) Stop(k, t, /*preempted=*/true);
    if (!Admits(q, job.num_gpu)) {  // quota still short once the victims left: undo
      for (int k : victims) {
        --result_.jobs[k].preemptions;
        --result_.preemptions;
        Start(k, t);  // it ran until t and goes on from there
      }
      return false;
    }
    for (int k : victims) ledger_.Record(me, std::to_string(jobs_[k].id));
    Start(j, t);
    return true;
  }

  void Sample(double t) {
    for (int q = 0; q < tree_.size(); ++q)
      result_.samples.push_back({t, q, allocated_[q * R_ + kGpu], fair_share_[q * R_ + kGpu],
                                 request_[q * R_ + kGpu]});
  }

  std::string StuckMessage() const {
    for (int q = 0; q < tree_.size(); ++q)
      if (!pending_[q].empty()) {
        const int j = std::get<2>(*pending_[q].begin());
        return absl::StrFormat(
            "queue simulation: job %d (%d GPUs) in queue %s can never start: nothing runs and "
            "its queue's limits or quota leave no room",
            jobs_[j].id, jobs_[j].num_gpu, tree_.name(q));
      }
    return "queue simulation: stuck";
  }

  const queues::QueueTree& tree_;
  const std::vector<QueueSimJob>& jobs_;
  const QueueSimOptions& options_;
  const int R_;
  int free_;
  std::vector<Record> records_;
  std::vector<std::set<PendingKey>> pending_;
  std::vector<std::set<RunningKey>> running_;
  std::vector<double> allocated_, request_, capacity_, fair_share_, usage_;
  std::vector<std::string> names_;
  std::unique_ptr<queues::KueueQuota> kueue_;
  std::unique_ptr<queues::ReclaimJudge> judge_;
  queues::ShareDivider divider_;
  queues::UsageHistory usage_history_;
  queues::PreemptionLedger ledger_;
  std::priority_queue<Finish, std::vector<Finish>, std::greater<Finish>> finishes_;
  QueueSimResult result_;
};

}  // namespace

absl::StatusOr<QueueSimResult> SimulateQueues(const queues::QueueTree& tree, int gpus,
                                              const std::vector<QueueSimJob>& jobs,
                                              const QueueSimOptions& options) {
  if (gpus < 1) return absl::InvalidArgumentError("queue simulation: gpus must be >= 1");
  if (!(options.interval >= 0) || !(options.sample_every >= 0) || !(options.k_value >= 0) ||
      std::isinf(options.interval) || std::isinf(options.k_value))
    return absl::InvalidArgumentError(
        "queue simulation: interval, sample_every and k_value must be finite numbers >= 0");
  if (absl::Status s = options.usage.Check(); !s.ok()) return s;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const QueueSimJob& j = jobs[i];
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrFormat("job %d (row %d): %s", j.id, i, why));
    };
    if (!std::isfinite(j.submit_time) || j.submit_time < 0) return bad("submit_time must be >= 0");
    if (!std::isfinite(j.duration) || j.duration <= 0) return bad("duration must be > 0");
    if (j.num_gpu < 1 || j.num_gpu > gpus)
      return bad(absl::StrFormat("num_gpu must be from 1 to the %d GPUs of the pool", gpus));
    if (j.queue < 0 || j.queue >= tree.size()) return bad("queue index out of range");
    if (!tree.leaf(j.queue))
      return bad(
          absl::StrFormat("queue %s has child queues; jobs go to leaves", tree.name(j.queue)));
    for (int q = j.queue; q >= 0; q = tree.parent(q))
      if (j.num_gpu > tree.limit(q, kGpu) + 1e-9)
        return bad(absl::StrFormat("needs %d GPUs, above queue %s's limit of %g", j.num_gpu,
                                   tree.name(q), tree.limit(q, kGpu)));
  }
  QueueRun run(tree, gpus, jobs, options);
  return run.Go();
}

}  // namespace gpufleet::sim
