// jobtime: runs a job-time policy (any registered jobtime::JobTimePolicy: fifo, las, dlas-gpu,
// hetero-las, gavel-lp, ...) unchanged inside the engine cycle. The action keeps one
// policy object and a ledger (jobtime_ledger.h) across cycles and, on each cycle at the session's
// time, does what the simulator does on a scheduling point:
//   1. jobs that left the scheduler finished (OnFinish); the ledger's running jobs are those whose
//      tasks occupy nodes (a job stopped or started by anything else is taken as it is);
//   2. the pool is the cluster's GPUs per model (jobtime_models.h): for each model the healthy
//      GPUs nothing holds plus those the ledger's running jobs hold;
//   3. new whole-GPU jobs arrive (OnArrival) in submission order;
//   4. the policy's plan (Schedule) is checked as the simulator checks it and applied with
//      statements: running jobs left out of a full plan are evicted (preempted), a job given
//      another model is evicted and placed again on the new model in the same cycle (migrated;
//      preempted instead when it does not fit there), pending jobs in the plan start with all
//      their tasks on GPUs of the assigned model or not at all.
// Jobs whose tasks ask for shared GPUs, or for no GPU, are not job-time jobs: other actions place
// them (their GPUs are then not in the pool). See docs/engine.md.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/actions/place_on_model.h"
#include "gpufleet/engine/jobtime_ledger.h"
#include "gpufleet/engine/jobtime_models.h"
#include "gpufleet/engine/statement.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::engine {
namespace {

// A job without an expected duration never runs out of work as far as the policy can tell.
constexpr double kUnknownDuration = 1e18;

// What the ledger's jobtime::JobSpec is built from, kept to rebuild speeds when models appear.
struct JobtimeJobInfo {
  std::map<std::string, double> throughput;  // lower-case model -> speed; empty: 1.0 everywhere
  std::optional<std::set<std::string>> allowed;  // lower-case models every task allows
  std::vector<Pod> tasks;  // as submitted, to notice an update (cleared once finished)
  std::map<std::string, double> raw_throughput;
  double expected_duration = 0;
};

// Whole GPUs over all tasks, or 0 when a task asks for a shared GPU or none (not a job-time job).
int WholeGpus(const Job& job) {
  int n = 0;
  for (const Pod& p : job.tasks) {
    const DeviceRequest* g = p.Find(kGpu);
    if (g == nullptr || g->count < 1 || !g->whole()) return 0;
    n += g->count;
  }
  return n;
}

double Duration(const Job& job) {
  return job.expected_duration > 0 ? job.expected_duration : kUnknownDuration;
}

JobtimeJobInfo InfoOf(const Job& job) {
  JobtimeJobInfo info;
  info.tasks = job.tasks;
  info.raw_throughput = job.throughput;
  info.expected_duration = job.expected_duration;
  for (const auto& [model, speed] : job.throughput)
    info.throughput[absl::AsciiStrToLower(model)] = speed;
  for (const Pod& p : job.tasks) {
    if (p.gpu_models.empty()) continue;
    std::set<std::string> mine;
    for (const std::string& m : p.gpu_models) mine.insert(absl::AsciiStrToLower(m));
    if (!info.allowed) {
      info.allowed = std::move(mine);
      continue;
    }
    std::set<std::string> both;
    std::set_intersection(info.allowed->begin(), info.allowed->end(), mine.begin(), mine.end(),
                          std::inserter(both, both.end()));
    info.allowed = std::move(both);
  }
  return info;
}

class Jobtime : public Action {
 public:
  Jobtime(std::string policy_name, std::unique_ptr<jobtime::JobTimePolicy> policy,
          std::map<std::string, double> perf_factors, uint64_t seed)
      : policy_name_(std::move(policy_name)), policy_(std::move(policy)),
        models_(std::move(perf_factors)) {
    ledger_.SetSeed(seed);
  }


  void Execute(Session& s) override {
    ledger_.SetTime(s.now());
    if (models_.Refresh(s.state())) {
      ledger_.SetNumModels(models_.num_models());
      for (int i = 0; i < ledger_.size(); ++i) ledger_.job(i).spec.speed = Speeds(info_[i]);
    }
    absl::flat_hash_map<std::string, int> session_job;
    for (const JobInfo& j : s.jobs()) session_job[j.name()] = j.id;

    // Counters advance with the last cycle's pool (perf factors do not change). A pending job
    // whose tasks were updated leaves and arrives again as a new job (policies read a job's GPU
    // count once, on arrival); new speeds or durations apply in place.
    std::vector<int> active = ActiveJobs();
    for (int i : active) {
      auto it = session_job.find(ledger_.name(i));
      const Job* spec = it == session_job.end() ? nullptr : s.job(it->second).spec;
      if (spec == nullptr ||
          (ledger_.job(i).state == jobtime::JobState::kPending && spec->tasks != info_[i].tasks)) {
        ledger_.Finish(i);
        policy_->OnFinish(i, ledger_.view());
        info_[i] = JobtimeJobInfo();
      } else if (spec->throughput != info_[i].raw_throughput ||
                 spec->expected_duration != info_[i].expected_duration) {
        info_[i] = InfoOf(*spec);
        ledger_.job(i).spec.speed = Speeds(info_[i]);
        ledger_.job(i).spec.duration = Duration(*spec);
      }
    }
    active = ActiveJobs();
    for (int i : active) Reconcile(s, i, s.job(session_job.at(ledger_.name(i))));

    absl::StatusOr<jobtime::GpuPool> pool = models_.Pool(PoolCounts(s));
    if (!pool.ok()) {
      MarkWaiting(s, session_job, "no GPU is free for job-time jobs");
      return;
    }
    pool_ = *std::move(pool);
    ledger_.SetPool(&*pool_);
    if (!initialized_) {
      if (absl::Status st = policy_->Init(ledger_.view()); !st.ok()) {
        MarkWaiting(s, session_job, absl::StrFormat("the policy failed to start: %s", st.message()));
        return;
      }
      initialized_ = true;
    }
    Arrivals(s);

    plan_.clear();
    policy_->Schedule(ledger_.view(), &plan_);
    const bool keep_unlisted = policy_->TakeKeepUnlisted();
    if (absl::Status st = ledger_.Validate(plan_, keep_unlisted); !st.ok()) {
      MarkWaiting(s, session_job, absl::StrFormat("%s; nothing applied", st.message()));
      return;
    }
    Apply(s, session_job, keep_unlisted);
    MarkWaiting(s, session_job, "");
  }

 private:
  // Ledger indices of jobs not finished, ascending (the simulator's tie order).
  std::vector<int> ActiveJobs() const {
    std::vector<int> out;
    for (int i = first_active_; i < ledger_.size(); ++i) {
      jobtime::JobState st = ledger_.job(i).state;
      if (st == jobtime::JobState::kPending || st == jobtime::JobState::kRunning) out.push_back(i);
    }
    return out;
  }

  std::vector<double> Speeds(const JobtimeJobInfo& info) const {
    if (info.throughput.empty() && !info.allowed) return {};
    std::vector<double> speed(models_.num_models(), 0.0);
    for (int m = 0; m < models_.num_models(); ++m) {
      const std::string key = absl::AsciiStrToLower(models_.name(m));
      if (info.allowed && !info.allowed->count(key)) continue;
      auto it = info.throughput.find(key);
      speed[m] = info.throughput.empty() ? 1.0 : (it == info.throughput.end() ? 0.0 : it->second);
    }
    return speed;
  }

  // The ledger follows what runs: a job evicted or started by something else (another action, a
  // restored task, a failed cycle after this action ran) is taken as preempted or started.
  void Reconcile(Session& s, int i, const JobInfo& job) {
    const bool runs = job.occupied > 0;
    const jobtime::JobState st = ledger_.job(i).state;
    if (st == jobtime::JobState::kRunning && !runs) {
      ledger_.Preempt(i);
    } else if (st == jobtime::JobState::kPending && runs) {
      for (int t : job.tasks) {
        const TaskInfo& task = s.task(t);
        if (!task.occupies()) continue;
        const Allocation* a = s.state().FindAllocation(task.name());
        const int m = a == nullptr ? -1 : models_.ModelOf(s.state(), *a);
        if (m >= 0) ledger_.Start(i, m);
        break;
      }
    }
  }

  bool Arrives(const JobInfo& j) const {
    return j.valid && j.inqueue && ledger_.Find(j.name()) < 0 && WholeGpus(*j.spec) > 0;
  }

  // GPUs per model that job-time jobs may hold: those nothing holds, those the ledger's running
  // jobs hold, and those of whole-GPU jobs that arrive already running (restored tasks).
  std::vector<int> PoolCounts(const Session& s) const {
    std::vector<int> counts(models_.num_models());
    for (int m = 0; m < models_.num_models(); ++m) counts[m] = models_.free(m) + ledger_.busy()[m];
    for (const JobInfo& j : s.jobs()) {
      if (j.occupied == 0 || !Arrives(j)) continue;
      for (int t : j.tasks) {
        const Allocation* a = s.tasks()[t].occupies()
                                  ? s.state().FindAllocation(s.tasks()[t].name())
                                  : nullptr;
        const int m = a == nullptr ? -1 : models_.ModelOf(s.state(), *a);
        if (m < 0) continue;
        for (const DeviceGrant& g : a->devices) counts[m] += g.type == kGpu;
      }
    }
    // GPUs held for a whole-GPU starvation target (reservation_ledger.h) are its to take: they
    // count so that the policy can plan it; its start lifts the holds, other starts fail there.
    const int target = s.reservations().target();
    if (target >= 0 && WholeGpus(*s.jobs()[target].spec) > 0)
      for (const auto& [n, d] : s.reservations().HeldWholeGpus(s)) {
        Allocation probe;
        probe.node = s.state().node(n).name;
        probe.devices.push_back(DeviceGrant{kGpu, s.state().node(n).devices[d].minor, 100, 0});
        const int m = models_.ModelOf(s.state(), probe);
        if (m >= 0) ++counts[m];
      }
    return counts;
  }

  // New whole-GPU jobs, in submission order, that some model could ever hold.
  void Arrivals(Session& s) {
    std::vector<int> fresh;
    for (const JobInfo& j : s.jobs())
      if (Arrives(j)) fresh.push_back(j.id);
    std::stable_sort(fresh.begin(), fresh.end(), [&](int a, int b) {
      return s.job(a).spec->creation < s.job(b).spec->creation;
    });
    for (int id : fresh) {
      JobInfo& job = s.job(id);
      JobtimeJobInfo info = InfoOf(*job.spec);
      jobtime::JobSpec spec;
      spec.submit_time = ledger_.now();
      spec.num_gpu = WholeGpus(*job.spec);
      spec.duration = Duration(*job.spec);
      spec.speed = Speeds(info);
      if (!FitsSomeModel(spec)) {
        std::vector<std::string> usable;
        for (int m = 0; m < models_.num_models(); ++m)
          if (spec.speed.empty() || spec.speed[m] > 0) usable.push_back(models_.name(m));
        job.reason = Reason(
            usable.empty()
                ? "its throughput and gpu_models name none of the cluster's GPU models"
                : absl::StrFormat("needs %d whole GPUs of one model it can run on; no model has "
                                  "that many (%s)",
                                  spec.num_gpu, absl::StrJoin(usable, ", ")));
        continue;
      }
      spec.id = ledger_.size();
      const int i = ledger_.Add(job.name(), std::move(spec));
      info_.push_back(std::move(info));
      policy_->OnArrival(i, ledger_.view());
      Reconcile(s, i, job);  // already running (restored, or placed by an earlier action)
    }
  }

  bool FitsSomeModel(const jobtime::JobSpec& spec) const {
    for (int m = 0; m < models_.num_models(); ++m)
      if (models_.healthy(m) >= spec.num_gpu && (spec.speed.empty() || spec.speed[m] > 0))
        return true;
    return false;
  }

  // Stops first (they free GPUs), then migrations, then starts in plan order, as the simulator.
  void Apply(Session& s, const absl::flat_hash_map<std::string, int>& session_job,
             bool keep_unlisted) {
    absl::flat_hash_map<int, int> planned;
    for (const jobtime::Assignment& a : plan_) planned[a.job] = a.model;
    std::vector<int> stops;
    if (keep_unlisted) {
      for (const jobtime::Assignment& a : plan_)
        if (ledger_.job(a.job).state == jobtime::JobState::kRunning) stops.push_back(a.job);
    } else {
      stops = ledger_.running();
    }
    std::vector<int> moving;
    {
      Statement st(s);
      for (int i : stops) {
        const jobtime::Job& j = ledger_.job(i);
        auto it = planned.find(i);
        const int m = it == planned.end() ? -1 : it->second;
        JobInfo& job = s.job(session_job.at(ledger_.name(i)));
        if (m < 0) {
          Evict(s, st, job, Reason("preempted"));
          ledger_.Preempt(i);
        } else if (m != j.model) {
          Evict(s, st, job, Reason(absl::StrFormat("migrating from %s to %s",
                                                   models_.name(j.model), models_.name(m))));
          ledger_.Migrate(i, m);
          moving.push_back(i);
        }
      }
      st.Commit();
    }
    for (int i : moving) {
      JobInfo& job = s.job(session_job.at(ledger_.name(i)));
      const int m = ledger_.job(i).model;
      // An evicted task normally waits for the next cycle; a migration places it again at once,
      // so the cycle reports an eviction and a bind for the same task (stop, then restart there).
      SetReleasing(s, job, TaskStatus::kPending);
      if (FitResult placed = PlaceOnModel(s, job.id, models_.spellings(m)); !placed.ok()) {
        SetReleasing(s, job, TaskStatus::kReleasing);
        ledger_.UndoMigration(i);
        job.reason = Reason(absl::StrFormat("preempted: could not move to %s: %s",
                                            models_.name(m), placed.reason));
      }
    }
    for (const jobtime::Assignment& a : plan_) {
      if (ledger_.job(a.job).state != jobtime::JobState::kPending || a.model == jobtime::kStop)
        continue;
      JobInfo& job = s.job(session_job.at(ledger_.name(a.job)));
      if (FitResult placed = PlaceOnModel(s, job.id, models_.spellings(a.model)); placed.ok()) {
        ledger_.Start(a.job, a.model);
        job.reason.clear();
      } else {
        job.reason =
            Reason(absl::StrFormat("planned on %s, but %s", models_.name(a.model), placed.reason));
      }
    }
  }

  static void Evict(Session& s, Statement& st, const JobInfo& job, const std::string& reason) {
    for (int t : job.tasks)
      if (s.task(t).status == TaskStatus::kRunning) (void)st.Evict(t, reason);
  }

  // Moves a job's tasks evicted in this cycle between releasing and pending.
  static void SetReleasing(Session& s, const JobInfo& job, TaskStatus to) {
    for (int t : job.tasks) {
      TaskInfo& task = s.task(t);
      if (task.status == TaskStatus::kReleasing || task.status == TaskStatus::kPending)
        task.status = to;
    }
  }

  // Pending ledger jobs get a reason unless they have one from this cycle; `why` overrides.
  void MarkWaiting(Session& s, const absl::flat_hash_map<std::string, int>& session_job,
                   const std::string& why) {
    for (int i : ActiveJobs()) {
      if (ledger_.job(i).state != jobtime::JobState::kPending) continue;
      auto it = session_job.find(ledger_.name(i));
      if (it == session_job.end()) continue;
      JobInfo& job = s.job(it->second);
      if (!why.empty())
        job.reason = Reason(why);
      else if (job.reason.empty())
        job.reason = Reason(absl::StrFormat("waiting for %d GPUs (not in the policy's plan)",
                                            ledger_.job(i).spec.num_gpu));
    }
    while (first_active_ < ledger_.size() &&
           ledger_.job(first_active_).state == jobtime::JobState::kDone)
      ++first_active_;
  }

  std::string Reason(const std::string& what) const {
    return absl::StrFormat("jobtime %s: %s", policy_name_, what);
  }

  std::string policy_name_;
  std::unique_ptr<jobtime::JobTimePolicy> policy_;
  JobtimeModels models_;
  JobtimeLedger ledger_;
  std::vector<JobtimeJobInfo> info_;  // per ledger job
  std::optional<jobtime::GpuPool> pool_;
  std::vector<jobtime::Assignment> plan_;
  bool initialized_ = false;
  int first_active_ = 0;  // ledger jobs before it are all finished
};

absl::StatusOr<std::map<std::string, double>> PerfFactors(const Json& p) {
  std::map<std::string, double> out;
  auto it = p.find("perf_factors");
  if (it == p.end() || it->is_null()) return out;
  if (!it->is_object())
    return absl::InvalidArgumentError(
        "jobtime: perf_factors must be an object {model: factor}, got " + it->dump());
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    if (!kv->is_number() || !(kv->get<double>() > 0) || !std::isfinite(kv->get<double>()))
      return absl::InvalidArgumentError(absl::StrFormat(
          "jobtime: perf_factors.%s must be a number > 0, got %s", kv.key(), kv->dump()));
    out[kv.key()] = kv->get<double>();
  }
  return out;
}

GPUFLEET_REGISTER(Action,
    {.name = "jobtime",
     .description = "run a registered job-time policy on whole-GPU jobs, per GPU model",
     .params = {{"policy", ParamType::kString, "fifo", "job-time policy spec"},
                {"perf_factors", ParamType::kAny, nullptr,
                 "{model: factor} for attained service; default: per-model FP32 peaks"},
                {"seed", ParamType::kInt, 0,
                 "seeds the agnostic policies' model draw, as the simulator's seed (unsigned "
                 "64-bit)"}},
     .traits = {.places_tasks = true, .evicts = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<Action>> {
      ASSIGN_OR_RETURN(std::string spec, p.Get<std::string>("policy"));
      absl::StatusOr<std::unique_ptr<jobtime::JobTimePolicy>> policy =
          jobtime::MakeJobTimePolicy(spec);
      if (!policy.ok())
        return absl::Status(policy.status().code(),
                            absl::StrFormat("jobtime: policy \"%s\": %s", spec,
                                            policy.status().message()));
      ASSIGN_OR_RETURN(auto perf_factors, PerfFactors(p.json()));
      ASSIGN_OR_RETURN(auto parsed, ParseSpec(spec));
      ASSIGN_OR_RETURN(uint64_t seed, p.Get<uint64_t>("seed"));
      return std::unique_ptr<Action>(
          new Jobtime(parsed.first, *std::move(policy), std::move(perf_factors), seed));
    });

}  // namespace
}  // namespace gpufleet::engine
