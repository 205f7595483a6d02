#include "gpufleet/sim/gavel_rounds.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::sim {

using jobtime::Assignment;
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
};

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
      // Completions, latest finish first (ties: lower job first), as Gavel pops its heap.
      std::sort(tasks_.begin(), tasks_.end(), [](const MicroTask& a, const MicroTask& b) {
        return a.finish != b.finish ? a.finish > b.finish : a.job < b.job;
      });
      for (const MicroTask& t : tasks_) {
        Job& j = jobs_[t.job];
        const double held = t.finish - t.start;
        j.run_time += held;
        j.gpu_time += held * j.spec.num_gpu;
        j.service += held * j.spec.num_gpu * pool_.model(t.model).perf_factor;
        busy_gpu_seconds_ += held * j.spec.num_gpu;
        j.last_update = t.finish;
        const double charged =
            t.finish - (options_.gavel.charge_idle_gaps ? round_start : dispatched_at);
        const int k = j.spec.num_gpu;
        // Gavel splits the steps over the k workers (steps // k each, the rest to the last) and
        // fails the micro-task if any worker ran none.
        const bool split_fails = k > 1 && std::floor(t.steps / k) <= 0;
        const bool succeeded = t.steps > 0 && charged > 0 &&
                               !(split_fails && options_.gavel.drop_stuck_jobs);
        policy_.OnMicroTask(t.job, t.model, charged, succeeded, view_);
        if (succeeded) {
          failures_[t.job] = 0;
          j.work_done += t.steps;
          if (j.work_done >= j.spec.duration) Retire(t.job, t.finish, false, &left, &active);
        } else if (++failures_[t.job] >= options_.gavel.max_failed_attempts) {
          Retire(t.job, t.finish, true, &left, &active);
        }
      }
      for (const MicroTask& t : tasks_) {
        Job& j = jobs_[t.job];
        busy_[t.model] -= j.spec.num_gpu;
        if (j.state == JobState::kRunning) {
          j.state = JobState::kPending;
          j.wait_since = t.finish;
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
      for (const Assignment& a : plan) planned_[a.job] = -1;
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

  void Dispatch(const std::vector<Assignment>& plan, double now, double round) {
    for (const Assignment& a : plan) {
      Job& j = jobs_[a.job];
      const double rate = j.Speed(a.model);
      const double steps = std::min(std::floor(rate * round), j.spec.duration - j.work_done);
      tasks_.push_back({a.job, a.model, steps, now, now + steps / rate});
      if (j.first_start < 0) j.first_start = now;
      j.queueing_delay += now - j.wait_since;
      if (last_model_[a.job] >= 0 && last_model_[a.job] != a.model) ++j.migrations;
      last_model_[a.job] = a.model;
      j.state = JobState::kRunning;
      j.model = a.model;
      j.last_update = now;
      busy_[a.model] += j.spec.num_gpu;
      running_.push_back(a.job);
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
