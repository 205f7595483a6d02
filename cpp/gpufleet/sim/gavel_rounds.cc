#include "gpufleet/sim/gavel_rounds.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::sim {

using jobtime::Assignment;
using jobtime::GavelCompat;
using jobtime::GpuPool;
using jobtime::Job;
using jobtime::JobState;
using jobtime::JobTimePolicy;
using jobtime::JobTimeView;

namespace {

// Rounds in a row in which nothing runs, nothing is left to arrive and the policy dispatches
// nothing: the state can no longer change (Gavel's simulator spins there forever).
constexpr int kStuckRounds = 16;

struct MicroTask {
  int job;
  int model;
  double steps;
  double start;
  double finish;
  int partner = -1;            // a packed pair: the job sharing the GPUs (job < partner)
  double partner_steps = 0;
};

// Gavel splits a micro-task's steps over the job's k workers (steps // k each, the rest to the
// last) and fails it if any worker ran none.
bool SplitFails(double steps, int k) { return steps <= 0 || (k > 1 && std::floor(steps / k) <= 0); }

class Rounds {
 public:
  Rounds(const GpuPool& pool, std::vector<Job> jobs, JobTimePolicy& policy,
         const SimOptions& options)
      : pool_(pool), policy_(policy), options_(options), jobs_(std::move(jobs)) {
    busy_.assign(pool_.num_models(), 0);
    view_.jobs = &jobs_;
    view_.pool = &pool_;
    view_.running = &running_;
    view_.busy = &busy_;
    view_.seed = options.seed;
    view_.exact_host = true;
    view_.gavel = &options.gavel;
    planned_.assign(jobs_.size(), -1);
    failures_.assign(jobs_.size(), 0);
    last_model_.assign(jobs_.size(), -1);
  }

  absl::StatusOr<SimResult> Go() {
    const double round = policy_.MicroTaskSeconds();
    if (!(round > 0))
      return absl::InvalidArgumentError(
          "gavel_compat: this policy does not run in Gavel's rounds; use one of the gavel-* "
          "policies (gavel-lp, gavel-ftf, gavel-makespan, gavel-throughput, gavel-fifo)");
    // Arrival order: by submit time, ties in input order (Gavel's trace order).
    std::vector<int> order(jobs_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return jobs_[a].spec.submit_time < jobs_[b].spec.submit_time;
    });
    RETURN_IF_ERROR(policy_.Init(view_));
    SimResult result;
    const size_t n = jobs_.size();
    size_t next = 0, left = n;
    double first_submit = n > 0 ? jobs_[order[0]].spec.submit_time : 0;
    double now = first_submit;
    double round_start = 0, round_end = -1;  // Gavel's current_round_start_time / _end_time
    int64_t rounds = 0, active = 0;
    int idle_rounds = 0;
    std::vector<Assignment> plan;
    std::vector<int> used;
    while (left > 0) {
      const bool idle_after_last_arrival = next == n && tasks_.empty();
      double dispatched_at = now;
      if (!tasks_.empty()) {
        double latest = 0;
        for (const MicroTask& t : tasks_) latest = std::max(latest, t.finish);
        if (round_end >= 0) round_start = round_end;
        round_end = latest;
        dispatched_at = tasks_.front().start;
        now = latest;
      } else if (next < n) {
        now = std::max(now, jobs_[order[next]].spec.submit_time);
      }
      // Completions, latest finish first (ties: single jobs before pairs, then by job), as
      // Gavel pops its heap.
      std::sort(tasks_.begin(), tasks_.end(), [](const MicroTask& a, const MicroTask& b) {
        if (a.finish != b.finish) return a.finish > b.finish;
        if ((a.partner >= 0) != (b.partner >= 0)) return a.partner < 0;
        return a.job != b.job ? a.job < b.job : a.partner < b.partner;
      });
      for (const MicroTask& t : tasks_) {
        const double held = t.finish - t.start;
        const int k = jobs_[t.job].spec.num_gpu;
        for (int i : {t.job, t.partner}) {
          if (i < 0) continue;
          Job& j = jobs_[i];
          j.run_time += held;
          j.gpu_time += held * k;
          j.service += held * k * pool_.model(t.model).perf_factor;
          j.last_update = t.finish;
        }
        busy_gpu_seconds_ += held * k;  // a pair's GPUs once
        const double charged =
            t.finish - (options_.gavel.charge_idle_gaps ? round_start : dispatched_at);
        const bool keep_stuck = !options_.gavel.drop_stuck_jobs;
        if (t.partner < 0) {
          const bool succeeded =
              t.steps > 0 && charged > 0 && (keep_stuck || !SplitFails(t.steps, k));
          policy_.OnMicroTask(t.job, t.model, charged, succeeded, view_);
          if (succeeded) {
            failures_[t.job] = 0;
            Progress(t.job, t.steps, t.finish, &left, &active);
          } else if (++failures_[t.job] >= options_.gavel.max_failed_attempts) {
            Retire(t.job, t.finish, true, &left, &active);
          }
          continue;
        }
        // A pair: both jobs end at the pair's finish; a failure counts against neither job and
        // a success clears neither job's failures (Gavel counts single jobs only).
        const bool succeeded =
            charged > 0 && (keep_stuck ? t.steps > 0 && t.partner_steps > 0
                                       : !SplitFails(t.steps, k) && !SplitFails(t.partner_steps, k));
        policy_.OnPairMicroTask(t.job, t.partner, t.model, charged, succeeded, view_);
        if (succeeded) {
          Progress(t.job, t.steps, t.finish, &left, &active);
          Progress(t.partner, t.partner_steps, t.finish, &left, &active);
        }
      }
      for (const MicroTask& t : tasks_) {
        busy_[t.model] -= jobs_[t.job].spec.num_gpu;
        for (int i : {t.job, t.partner}) {
          if (i < 0) continue;
          Job& j = jobs_[i];
          if (j.state == JobState::kRunning) {
            j.state = JobState::kPending;
            j.wait_since = t.finish;
          }
        }
      }
      const bool had_tasks = !tasks_.empty();
      tasks_.clear();
      running_.clear();
      // Arrivals due by now join at this boundary.
      bool arrived = false;
      while (next < n && jobs_[order[next]].spec.submit_time <= now) {
        const int i = order[next++];
        Job& j = jobs_[i];
        j.state = JobState::kPending;
        j.wait_since = j.spec.submit_time;
        j.last_update = now;
        ++active;
        arrived = true;
        policy_.OnArrival(i, view_);
      }
      if (left == 0) break;
      view_.now = now;
      view_.gavel_idle_after_last_arrival = idle_after_last_arrival;
      plan.clear();
      policy_.Schedule(view_, &plan);
      policy_.TakeKeepUnlisted();
      RETURN_IF_ERROR(jobtime::CheckPlan(
          plan, jobs_, pool_, busy_, false,
          [this](int i) { return std::to_string(jobs_[i].spec.id); }, &planned_, &used));
      for (const Assignment& a : plan) {
        planned_[a.job] = -1;
        if (a.partner >= 0) planned_[a.partner] = -1;
      }
      Dispatch(plan, now, round);
      ++rounds;
      if (options_.record_timeseries) {
        int gpus = 0;
        for (int b : busy_) gpus += b;
        result.timeseries.push_back({now, static_cast<int>(running_.size()),
                                     static_cast<int>(active - running_.size()), gpus});
      }
      if (options_.progress && rounds % options_.progress_every == 0)
        options_.progress(static_cast<int64_t>(n - left));
      // Nothing ran, arrived or will arrive, and nothing was dispatched: nothing can change.
      idle_rounds = (!had_tasks && !arrived && next == n && tasks_.empty()) ? idle_rounds + 1 : 0;
      if (idle_rounds >= kStuckRounds) {
        std::string stuck;
        for (size_t i = 0; i < n && stuck.size() < 200; ++i)
          if (jobs_[i].state == JobState::kPending)
            stuck += (stuck.empty() ? "" : ", ") + std::to_string(jobs_[i].spec.id);
        return absl::FailedPreconditionError(absl::StrFormat(
            "gavel_compat: at t=%g the policy leaves jobs %s waiting forever on an idle cluster "
            "(Gavel's own simulator loops here)",
            now, stuck));
      }
    }
    if (options_.progress) options_.progress(static_cast<int64_t>(n));
    result.summary = Summarize(jobs_, pool_.total_gpus(), busy_gpu_seconds_);
    // Gavel's "Total duration": the end of the last round.
    result.summary.makespan = n > 0 ? now - first_submit : 0;
    if (result.summary.makespan > 0 && pool_.total_gpus() > 0)
      result.summary.gpu_utilization =
          busy_gpu_seconds_ / (static_cast<double>(pool_.total_gpus()) * result.summary.makespan);
    result.scheduling_points = rounds;
    result.jobs = std::move(jobs_);
    return result;
  }

 private:
  void Retire(int i, double end, bool dropped, size_t* left, int64_t* active) {
    Job& j = jobs_[i];
    j.state = JobState::kDone;
    j.dropped = dropped;
    j.end_time = end;
    --*left;
    --*active;
    policy_.OnFinish(i, view_);
  }

  void Progress(int i, double steps, double end, size_t* left, int64_t* active) {
    Job& j = jobs_[i];
    j.work_done += steps;
    if (j.work_done >= j.spec.duration) Retire(i, end, false, left, active);
  }

  // Steps of job `i` at `rate` in one round, and when they end (at `now` for none).
  std::pair<double, double> Grant(int i, double rate, double now, double round) const {
    const Job& j = jobs_[i];
    const double steps = std::min(std::floor(rate * round), j.spec.duration - j.work_done);
    return {steps, rate > 0 ? now + steps / rate : now};
  }

  void Start(int i, int model, double now) {
    Job& j = jobs_[i];
    if (j.first_start < 0) j.first_start = now;
    j.queueing_delay += now - j.wait_since;
    if (last_model_[i] >= 0 && last_model_[i] != model) ++j.migrations;
    last_model_[i] = model;
    j.state = JobState::kRunning;
    j.model = model;
    j.last_update = now;
    running_.push_back(i);
  }

  void Dispatch(const std::vector<Assignment>& plan, double now, double round) {
    const int models = pool_.num_models();
    for (const Assignment& a : plan) {
      if (a.partner < 0) {
        auto [steps, finish] = Grant(a.job, jobs_[a.job].Speed(a.model), now, round);
        tasks_.push_back({a.job, a.model, steps, now, finish});
      } else {
        // Each job runs at its co-located rate; the pair ends with the later of the two.
        const int lo = std::min(a.job, a.partner), hi = std::max(a.job, a.partner);
        const GavelCompat& g = options_.gavel;
        auto [lo_steps, lo_end] = Grant(lo, g.PairRate(lo, hi, a.model, models), now, round);
        auto [hi_steps, hi_end] = Grant(hi, g.PairRate(hi, lo, a.model, models), now, round);
        tasks_.push_back({lo, a.model, lo_steps, now, std::max(lo_end, hi_end), hi, hi_steps});
        Start(a.partner, a.model, now);
      }
      Start(a.job, a.model, now);
      busy_[a.model] += jobs_[a.job].spec.num_gpu;
    }
    // A job that ran last round and is active but left out now was preempted.
    for (int i : ran_last_round_)
      if (jobs_[i].state == JobState::kPending) ++jobs_[i].preemptions;
    ran_last_round_ = running_;
  }

  const GpuPool& pool_;
  JobTimePolicy& policy_;
  const SimOptions& options_;
  std::vector<Job> jobs_;
  std::vector<int> running_;
  std::vector<int> busy_;
  std::vector<int> planned_;
  std::vector<int> failures_;
  std::vector<int> last_model_;
  std::vector<int> ran_last_round_;
  std::vector<MicroTask> tasks_;
  JobTimeView view_;
  double busy_gpu_seconds_ = 0;
};

}  // namespace

absl::StatusOr<SimResult> SimulateGavelRounds(const GpuPool& pool, std::vector<Job> jobs,
                                              JobTimePolicy& policy, const SimOptions& options) {
  Rounds rounds(pool, std::move(jobs), policy, options);
  return rounds.Go();
}

}  // namespace gpufleet::sim
