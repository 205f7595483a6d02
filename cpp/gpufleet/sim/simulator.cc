#include "gpufleet/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <utility>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/sim/device_ledger.h"
#include "gpufleet/sim/gavel_rounds.h"

namespace gpufleet::sim {

using jobtime::Assignment;
using jobtime::CheckPlan;
using jobtime::GpuModel;
using jobtime::GpuPool;
using jobtime::Job;
using jobtime::JobSpec;
using jobtime::JobState;
using jobtime::JobTimePolicy;
using jobtime::JobTimeView;
using jobtime::kNever;
namespace {

// Relative slack when comparing event times computed along different float paths.
constexpr double kTimeEps = 1e-9;

absl::Status ValidateJob(const JobSpec& s, size_t index, const GpuPool& pool) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrFormat("job %d (row %d): %s", s.id, index, why));
  };
  if (!std::isfinite(s.submit_time) || s.submit_time < 0) return bad("submit_time must be >= 0");
  if (s.num_gpu < 1) return bad("num_gpu must be >= 1");
  if (!std::isfinite(s.duration) || s.duration <= 0) return bad("duration must be > 0");
  if (!std::isfinite(s.memory_gib) || s.memory_gib < 0)
    return bad(absl::StrFormat("memory_gib must be finite and >= 0 (0: unknown), got %g", s.memory_gib));
  if (!s.speed.empty() && static_cast<int>(s.speed.size()) != pool.num_models())
    return bad(absl::StrFormat("has %d speeds for %d GPU models", s.speed.size(),
                               pool.num_models()));
  bool fits = false;
  for (int m = 0; m < pool.num_models(); ++m) {
    double v = s.speed.empty() ? 1.0 : s.speed[m];
    if (!std::isfinite(v) || v < 0) return bad("speeds must be finite and >= 0");
    const GpuModel& gm = pool.model(m);
    if (v > 0 && gm.count >= s.num_gpu && (gm.memory_gib <= 0 || s.memory_gib <= gm.memory_gib))
      fits = true;
  }
  if (!fits)
    return bad(absl::StrFormat(
        "needs %d GPUs of one model it can run on; the largest group has %d GPUs", s.num_gpu,
        pool.max_count()));
  return absl::OkStatus();
}

struct FinishEntry {
  double time;
  int job;
  uint32_t version;
  bool operator>(const FinishEntry& o) const {
    return time != o.time ? time > o.time : job > o.job;
  }
};

class Run {
 public:
  Run(const GpuPool& pool, std::vector<Job> jobs, JobTimePolicy& policy,
      const SimOptions& options,
      DeviceLedger* ledger)
      : pool_(pool), policy_(policy), options_(options), jobs_(std::move(jobs)), ledger_(ledger) {
    planned_.assign(jobs_.size(), -1);
    busy_per_model_.assign(pool_.num_models(), 0);
    view_.busy = &busy_per_model_;
    view_.jobs = &jobs_;
    view_.pool = &pool_;
    view_.running = &running_;
    view_.tiresias_compat = options.tiresias_compat;
    view_.restore_delay = options.restore_delay;
    view_.seed = options.seed;
    view_.exact_host = true;
  }

  absl::StatusOr<SimResult> Go() {
    // Arrival order: the input's, when it is sorted by submit time already (no index array).
    std::vector<int> order;
    const bool in_order = std::is_sorted(jobs_.begin(), jobs_.end(), [](const Job& a, const Job& b) {
      return a.spec.submit_time < b.spec.submit_time;
    });
    if (!in_order) {
      order.resize(jobs_.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return jobs_[a].spec.submit_time < jobs_[b].spec.submit_time;
      });
    }
    const size_t num_jobs = jobs_.size();
    auto arrival = [&](size_t k) { return in_order ? static_cast<int>(k) : order[k]; };
    if (num_jobs > 0) origin_ = jobs_[arrival(0)].spec.submit_time;
    RETURN_IF_ERROR(policy_.Init(view_));
    const double interval = options_.scheduling_interval;
    size_t next_arrival = 0;
    int64_t active = 0, finished = 0, points = 0;
    double next_tick = options_.tick > 0 ? 0 : kNever;
    double wakeup = kNever;
    bool dirty = false;  // an arrival or completion since the last scheduling point
    std::vector<Assignment> plan;
    SimResult result;
    while (next_arrival < num_jobs || active > 0) {
      double t_arrival =
          next_arrival < num_jobs ? jobs_[arrival(next_arrival)].spec.submit_time : kNever;
      double t_event = std::min(t_arrival, NextFinish());
      double t_point = std::min(wakeup, active > 0 ? next_tick : kNever);
      if (interval > 0) {
        // Scheduling points only on the interval grid (rounded up), when something changed.
        if (dirty) t_point = std::min(t_point, view_.now);
        t_point = t_point == kNever ? kNever : std::ceil(t_point / interval - 1e-12) * interval;
      } else {
        t_point = std::min(t_point, t_event);
      }
      double t = std::min(t_event, t_point);
      if (t == kNever)
        return absl::FailedPreconditionError(absl::StrFormat(
            "policy left %d jobs pending on an idle cluster at t=%g", active, view_.now));
      busy_gpu_seconds_ += (t - view_.now) * busy_gpus_;
      view_.now = t;
      // Completions (the finishing job's counters are brought up to t on its own).
      while (!finish_heap_.empty() && finish_heap_.top().time <= t + Slack(t)) {
        FinishEntry e = finish_heap_.top();
        finish_heap_.pop();
        Job& j = jobs_[e.job];
        if (j.state != JobState::kRunning || j.version != e.version) continue;
        AdvanceJob(j, t);
        j.work_done = j.spec.duration;
        j.end_time = t;
        j.state = JobState::kDone;
        if (ledger_ != nullptr) ledger_->Stop(e.job);
        RemoveRunning(e.job);
        --active;
        ++finished;
        dirty = true;
        policy_.OnFinish(e.job, view_);
      }
      // Arrivals.
      while (next_arrival < num_jobs && jobs_[arrival(next_arrival)].spec.submit_time <= t) {
        int i = arrival(next_arrival++);
        Job& j = jobs_[i];
        j.state = JobState::kPending;
        j.wait_since = j.spec.submit_time;
        j.last_update = t;
        ++active;
        dirty = true;
        policy_.OnArrival(i, view_);
      }
      if (t < t_point) continue;
      dirty = false;
      if (next_tick <= t) {
        // The first tick after t, computed rather than stepped to: an idle stretch (traces
        // with Unix timestamps start 1.7e9 s in) would otherwise cost one step per tick.
        next_tick = (std::floor(t / options_.tick) + 1) * options_.tick;
        while (next_tick <= t) next_tick += options_.tick;  // rounding: at most a step or two
      }
      plan.clear();
      policy_.Schedule(view_, &plan);
      RETURN_IF_ERROR(Apply(plan, policy_.TakeKeepUnlisted()));
      wakeup = policy_.NextWakeup(view_);
      if (!(wakeup > t)) wakeup = kNever;
      ++points;
      if (options_.record_timeseries) Sample(active, &result.timeseries);
      if (options_.progress && points % options_.progress_every == 0) options_.progress(finished);
    }
    if (options_.progress) options_.progress(finished);
    std::vector<int>().swap(order);  // per-job scratch, freed before the summary's own
    std::vector<int>().swap(planned_);
    result.summary = Summarize(jobs_, pool_.total_gpus(), busy_gpu_seconds_);
    result.scheduling_points = points;
    if (ledger_ != nullptr) result.leftover_allocations = ledger_->num_allocations();
    result.jobs = std::move(jobs_);
    return result;
  }

 private:
  double NextFinish() {
    while (!finish_heap_.empty()) {
      const FinishEntry& e = finish_heap_.top();
      const Job& j = jobs_[e.job];
      if (j.state == JobState::kRunning && j.version == e.version) return e.time;
      finish_heap_.pop();
    }
    return kNever;
  }

  // How close two times must be to count as one: relative to the time since the first arrival,
  // not to the clock's value, so a trace in Unix seconds (about 1.7e9) keeps the sub-millisecond
  // resolution of one that starts at 0 (a tolerance relative to the clock ended jobs up to 1.7 s
  // early there).
  double Slack(double t) const { return kTimeEps * std::max(1.0, t - origin_); }

  void AdvanceJob(Job& j, double t) { jobtime::AdvanceJob(j, t, pool_.model(j.model).perf_factor); }

  void PushFinish(int i) {
    Job& j = jobs_[i];
    ++j.version;
    double start = std::max(view_.now, j.stall_until);
    double finish = start + j.RemainingWork() / j.Speed(j.model);
    if (options_.tiresias_compat) finish = std::ceil(finish - Slack(finish));
    finish_heap_.push({finish, i, j.version});
  }

  void RemoveRunning(int i) {
    Job& j = jobs_[i];
    int pos = j.running_pos;
    int last = running_.back();
    running_[pos] = last;
    jobs_[last].running_pos = pos;
    running_.pop_back();
    j.running_pos = -1;
    busy_gpus_ -= j.spec.num_gpu;
    busy_per_model_[j.model] -= j.spec.num_gpu;
    ++j.version;
  }

  // Applies a full plan (running jobs left out are preempted) or, with `keep_unlisted`, a plan of
  // changes (running jobs left out keep their model).
  absl::Status Apply(const std::vector<Assignment>& plan, bool keep_unlisted) {
    RETURN_IF_ERROR(CheckPlan(
        plan, jobs_, pool_, busy_per_model_, keep_unlisted,
        [this](int i) { return std::to_string(jobs_[i].spec.id); }, &planned_, &used_scratch_));
    // Preemptions and migrations first (they free GPUs). A full plan visits every running job
    // (over a copy: RemoveRunning reorders running_); a plan of changes only its own entries.
    stop_scratch_.clear();
    if (keep_unlisted) {
      for (const Assignment& a : plan)
        if (jobs_[a.job].state == JobState::kRunning) stop_scratch_.push_back(a.job);
    } else {
      stop_scratch_.assign(running_.begin(), running_.end());
    }
    for (int i : stop_scratch_) {
      Job& j = jobs_[i];
      int m = planned_[i];
      if (m < 0) {
        AdvanceJob(j, view_.now);
        if (ledger_ != nullptr) ledger_->Stop(i);
        RemoveRunning(i);
        j.state = JobState::kPending;
        j.wait_since = view_.now;
        j.model = -1;
        ++j.preemptions;
      } else if (m != j.model) {
        AdvanceJob(j, view_.now);
        busy_per_model_[j.model] -= j.spec.num_gpu;
        busy_per_model_[m] += j.spec.num_gpu;
        j.model = m;
        j.stall_until = view_.now + options_.restore_delay;
        ++j.migrations;
        PushFinish(i);
        if (ledger_ != nullptr) {
          ledger_->Stop(i);
          moved_scratch_.push_back(i);
        }
      }
    }
    // Devices are handed out only after every stop of this plan, so each model has the room the
    // counts above promise.
    for (int i : moved_scratch_) RETURN_IF_ERROR(StartDevices(i));
    moved_scratch_.clear();
    for (const Assignment& a : plan) {
      Job& j = jobs_[a.job];
      planned_[a.job] = -1;
      if (j.state != JobState::kPending || a.model == jobtime::kStop) continue;
      j.state = JobState::kRunning;
      j.model = a.model;
      j.queueing_delay += view_.now - j.wait_since;
      j.last_update = view_.now;
      if (j.first_start < 0) j.first_start = view_.now;
      if (j.work_done > 0 || j.preemptions > 0) j.stall_until = view_.now + options_.restore_delay;
      j.running_pos = static_cast<int>(running_.size());
      running_.push_back(a.job);
      busy_gpus_ += j.spec.num_gpu;
      busy_per_model_[a.model] += j.spec.num_gpu;
      PushFinish(a.job);
      RETURN_IF_ERROR(StartDevices(a.job));
    }
    return absl::OkStatus();
  }

  absl::Status StartDevices(int i) {
    if (ledger_ == nullptr) return absl::OkStatus();
    Job& j = jobs_[i];
    absl::StatusOr<int> nodes = ledger_->Start(i, j.spec.num_gpu, j.model);
    if (!nodes.ok())
      return absl::InternalError(absl::StrFormat("job %d: %s", j.spec.id, nodes.status().message()));
    j.max_nodes = std::max(j.max_nodes, *nodes);
    return absl::OkStatus();
  }

  void Sample(int64_t active, std::vector<TimeSample>* out) {
    TimeSample s{view_.now, static_cast<int>(running_.size()),
                 static_cast<int>(active - running_.size()), busy_gpus_};
    if (!out->empty() && out->back().time == s.time)
      out->back() = s;
    else
      out->push_back(s);
  }

  const GpuPool& pool_;
  JobTimePolicy& policy_;
  const SimOptions& options_;
  std::vector<Job> jobs_;
  std::vector<int> running_;
  std::vector<int> planned_;
  std::vector<int> used_scratch_, stop_scratch_, moved_scratch_;
  double origin_ = 0;  // the first arrival: Slack() measures from it
  DeviceLedger* ledger_;
  std::vector<int> busy_per_model_;
  std::priority_queue<FinishEntry, std::vector<FinishEntry>, std::greater<FinishEntry>>
      finish_heap_;
  JobTimeView view_;
  int busy_gpus_ = 0;
  double busy_gpu_seconds_ = 0;
};

}  // namespace

absl::StatusOr<SimResult> Simulate(const GpuPool& pool, std::vector<JobSpec> jobs,
                                   JobTimePolicy& policy,
                                   const SimOptions& options) {
  std::vector<Job> records(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) records[i].spec = std::move(jobs[i]);
  std::vector<JobSpec>().swap(jobs);
  return Simulate(pool, std::move(records), policy, options);
}

namespace {

// The Gavel mode's co-located throughputs (GavelCompat::job_type, pair_rate): sizes that match
// the jobs and models, types in range, rates finite and >= 0.
absl::Status CheckColocation(const jobtime::GavelCompat& g, size_t jobs, int models) {
  if (g.job_type.empty() && g.pair_rate.empty()) return absl::OkStatus();
  if (g.job_type.size() != jobs)
    return absl::InvalidArgumentError(absl::StrFormat(
        "simulate: gavel job_type has %d entries for %d jobs", g.job_type.size(), jobs));
  const size_t want = static_cast<size_t>(std::max(g.types, 0)) * std::max(g.types, 0) * models;
  if (g.types < 1 || g.pair_rate.size() != want)
    return absl::InvalidArgumentError(absl::StrFormat(
        "simulate: gavel pair_rate has %d entries; expected types x types x models = %d x %d x %d",
        g.pair_rate.size(), g.types, g.types, models));
  for (size_t i = 0; i < jobs; ++i)
    if (g.job_type[i] < -1 || g.job_type[i] >= g.types)
      return absl::InvalidArgumentError(absl::StrFormat(
          "simulate: gavel job_type of job %d is %d; expected -1 (never packed) to %d", i,
          g.job_type[i], g.types - 1));
  for (size_t k = 0; k < g.pair_rate.size(); ++k)
    if (!(g.pair_rate[k] >= 0) || !std::isfinite(g.pair_rate[k]))
      return absl::InvalidArgumentError(absl::StrFormat(
          "simulate: gavel pair_rate[%d][%d][%d] is %g; expected a finite rate >= 0",
          k / models / g.types, k / models % g.types, k % models, g.pair_rate[k]));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SimResult> Simulate(const GpuPool& pool, std::vector<Job> jobs,
                                   JobTimePolicy& policy, const SimOptions& options) {
  // Finite too: an infinite delay or interval would leave jobs waiting for a time never reached.
  for (auto [name, value] : {std::pair{"restore_delay", options.restore_delay},
                             std::pair{"tick", options.tick},
                             std::pair{"scheduling_interval", options.scheduling_interval}})
    if (!(value >= 0) || !std::isfinite(value))
      return absl::InvalidArgumentError(
          absl::StrFormat("simulate: %s must be a finite number of seconds >= 0, got %g", name, value));
  for (auto [name, value] : {std::pair{"tick", options.tick},
                             std::pair{"scheduling_interval", options.scheduling_interval}})
    if (value > 0 && value < kMinSchedulingStep)
      return absl::InvalidArgumentError(absl::StrFormat(
          "simulate: %s must be 0 (off) or at least %g seconds, got %g", name,
          kMinSchedulingStep, value));
  if (options.progress_every < 1)
    return absl::InvalidArgumentError("simulate: progress_every must be >= 1");
  for (size_t i = 0; i < jobs.size(); ++i) RETURN_IF_ERROR(ValidateJob(jobs[i].spec, i, pool));
  // Only the specs are read: every other field starts from a default record.
  for (Job& j : jobs) j = Job{std::move(j.spec)};
  if (options.gavel.enabled) {
    if (options.tiresias_compat)
      return absl::InvalidArgumentError("simulate: choose tiresias_compat or gavel_compat, not both");
    if (options.restore_delay != 0 || options.tick != 0 || options.scheduling_interval != 0)
      return absl::InvalidArgumentError(
          "simulate: gavel_compat runs Gavel's rounds, without restore_delay, tick or "
          "scheduling_interval (Gavel's simulator has no checkpoint cost)");
    if (options.gavel.max_failed_attempts < 1)
      return absl::InvalidArgumentError("simulate: gavel max_failed_attempts must be >= 1");
    if (options.gavel.reference_model >= pool.num_models())
      return absl::InvalidArgumentError("simulate: gavel reference_model is not a model of the pool");
    RETURN_IF_ERROR(CheckColocation(options.gavel, jobs.size(), pool.num_models()));
    return SimulateGavelRounds(pool, std::move(jobs), policy, options);
  }
  std::unique_ptr<DeviceLedger> ledger;
  if (!options.placement.empty()) {
    ASSIGN_OR_RETURN(ledger, DeviceLedger::Create(
                                 pool, options.placement, static_cast<int>(jobs.size()),
                                 RackLayout{options.nodes_per_rack, options.racks_per_block}));
  }
  Run run(pool, std::move(jobs), policy, options, ledger.get());
  return run.Go();
}

}  // namespace gpufleet::sim
