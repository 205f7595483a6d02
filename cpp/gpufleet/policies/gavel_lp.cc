// Gavel's heterogeneity-aware max-min fairness with its LP solved exactly (Narayanan et al.,
// "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020, §4.1
// and §5). At each round boundary (round_duration s, 360 as in Gavel) it solves, over the active
// jobs m and GPU models j,
//   maximise t  s.t.  t <= sum_j (T_mj / T_m^eq) X_mj     (every job's normalised throughput)
//                     sum_j X_mj <= 1                      (a job runs on one model at a time)
//                     sum_m n_m X_mj <= C_j                (n_m GPUs per job, C_j GPUs of model j)
//                     X >= 0,
// where T_mj is the job's speed on model j and T_m^eq its throughput under an equal share of the
// cluster (time share min(1, G / (jobs x n_m)) spread over the models by their GPU counts). Rounds
// realise X as Gavel's mechanism does: (job, model) pairs are served in decreasing order of
// X_mj / (the fraction of its time the job has had on model j), each job at most once, and the
// GPUs left over go to any job that fits (work conservation). aware=false is Gavel's
// heterogeneity-agnostic max-min baseline: a scheduler that cannot tell models apart sees one
// pool of GPUs, so the LP has a single column per class (speed 1 wherever the job can run,
// capacity all GPUs) and a job's share is realised on a model drawn as every agnostic choice
// is (ModelChoice::kAgnostic). Solving the agnostic LP per model instead would leave the choice
// among its many equal optima to the column order, that is to how the cluster lists its models.
// gavel-maxmin is the cheaper greedy version.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/gavel_lp.h"
#include "gpufleet/policies/lp_solver.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {

absl::StatusOr<MaxMinShares> SolveMaxMinShares(const std::vector<ShareClass>& classes,
                                               const std::vector<int>& capacity) {
  MaxMinShares out;
  const int n = static_cast<int>(classes.size());
  const int models = static_cast<int>(capacity.size());
  double gpus = 0, jobs = 0;
  for (int c : capacity) gpus += c;
  for (const ShareClass& k : classes) {
    if (static_cast<int>(k.speed.size()) != models || k.jobs < 1 || k.gpus_per_job < 1)
      return absl::InvalidArgumentError(
          "max-min shares: a class needs one speed per model, jobs >= 1 and gpus_per_job >= 1");
    jobs += k.jobs;
  }
  if (n == 0 || gpus <= 0)
    return absl::InvalidArgumentError("max-min shares: no classes or no GPUs");
  // Columns: x[k][m] at k * models + m, then t.
  const int vars = n * models + 1;
  const int t = vars - 1;
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (int k = 0; k < n; ++k) {
    const ShareClass& cls = classes[k];
    const double equal_time = std::min(1.0, gpus / (jobs * cls.gpus_per_job));
    double equal = 0;
    for (int m = 0; m < models; ++m) equal += cls.speed[m] * equal_time * capacity[m] / gpus;
    std::vector<double> fair(vars, 0.0), one(vars, 0.0);
    fair[t] = 1.0;
    for (int m = 0; m < models; ++m) {
      if (cls.speed[m] <= 0) continue;
      fair[k * models + m] = -cls.speed[m] / std::max(equal, 1e-12);
      one[k * models + m] = 1.0;
    }
    a.push_back(std::move(fair));
    b.push_back(0.0);
    a.push_back(std::move(one));
    b.push_back(1.0);
  }
  for (int m = 0; m < models; ++m) {
    std::vector<double> cap(vars, 0.0);
    for (int k = 0; k < n; ++k)
      cap[k * models + m] = static_cast<double>(classes[k].jobs) * classes[k].gpus_per_job;
    a.push_back(std::move(cap));
    b.push_back(std::max(0, capacity[m]));
  }
  std::vector<double> c(vars, 0.0);
  c[t] = 1.0;
  ASSIGN_OR_RETURN(LpSolution r, MaximizeLp(a, b, c));
  out.t = r.x[t];
  out.x.resize(n);
  for (int k = 0; k < n; ++k)
    out.x[k].assign(r.x.begin() + k * models, r.x.begin() + (k + 1) * models);
  return out;
}

namespace {

class GavelLp : public JobTimePolicy {
 public:
  GavelLp(double round, bool aware) : round_(round), aware_(aware) {}

  void OnArrival(int job, const JobTimeView& view) override {
    Grow(view);
    active_.push_back(job);
    time_on_[job].assign(view.pool->num_models(), 0.0);
  }
  void OnFinish(int job, const JobTimeView&) override {
    active_.erase(std::find(active_.begin(), active_.end(), job));
  }
  double NextWakeup(const JobTimeView&) const override {
    return active_.empty() ? kNever : next_round_;
  }

  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    Grow(view);
    // Time each running job has had on its model since the last point.
    for (int i : *view.running) time_on_[i][view.job(i).model] += view.now - last_point_;
    last_point_ = view.now;
    const bool boundary = view.now >= next_round_ - 1e-9;
    if (boundary) {
      next_round_ = std::floor(view.now / round_ + 1e-9) * round_ + round_;
      Solve(view);
    }
    Filler fill(view, plan);
    std::vector<char> placed(view.jobs->size(), 0);
    if (!boundary) {
      // Mid-round: the round's jobs keep their GPUs; freed GPUs go by priority below.
      for (int i : *view.running) {
        fill.Take(i, view.job(i).model);
        placed[i] = 1;
      }
    }
    struct Pair {
      double priority;
      double share;
      int job;
      int model;
    };
    std::vector<Pair> pairs;
    for (int i : active_) {
      if (placed[i]) continue;
      const Job& j = view.job(i);
      const double age = std::max(view.now - j.spec.submit_time, 1e-9);
      if (!aware_) {  // one pooled column; the model is drawn below (model -1)
        const double x = share_[i].empty() ? 0.0 : share_[i][0];
        if (x <= 1e-9) continue;
        double held = 0;
        for (double s : time_on_[i]) held += s;
        const double had = held / age;
        pairs.push_back({had > 0 ? x / had : std::numeric_limits<double>::infinity(), x, i, -1});
        continue;
      }
      for (int m = 0; m < view.pool->num_models() && m < static_cast<int>(column_.size()); ++m) {
        const double x = share_[i].empty() ? 0.0 : share_[i][column_[m]];
        if (x <= 1e-9) continue;
        const double had = time_on_[i][m] / age;
        pairs.push_back({had > 0 ? x / had : std::numeric_limits<double>::infinity(), x, i, m});
      }
    }
    std::sort(pairs.begin(), pairs.end(), [this](const Pair& a, const Pair& b) {
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.share != b.share) return a.share > b.share;
      // Same job, same X and time share on two models: name order, not listing order.
      return a.job != b.job ? a.job < b.job : a.model >= 0 && column_[a.model] < column_[b.model];
    });
    for (const Pair& p : pairs) {
      if (placed[p.job]) continue;
      if (p.model < 0) {
        if (fill.TryPlace(p.job, ModelChoice::kAgnostic) >= 0) placed[p.job] = 1;
        continue;
      }
      if (!fill.Fits(p.job, p.model)) continue;
      fill.Take(p.job, p.model);
      placed[p.job] = 1;
    }
    const ModelChoice choice = aware_ ? ModelChoice::kFastest : ModelChoice::kAgnostic;
    for (int i : active_) {
      if (fill.total_free() == 0) break;
      if (!placed[i] && fill.TryPlace(i, choice) >= 0) placed[i] = 1;
    }
  }

 private:
  void Grow(const JobTimeView& view) {
    if (time_on_.size() < view.jobs->size()) {
      time_on_.resize(view.jobs->size());
      share_.resize(view.jobs->size());
    }
  }

  double Speed(const Job& j, int m) const {
    if (!j.CanRunOn(m)) return 0.0;
    return aware_ ? j.Speed(m) : 1.0;
  }

  // X for the active jobs, by class (see gavel_lp.h); on a solver failure the previous shares
  // stay (and the mechanism's back-fill keeps the cluster busy). Traces draw jobs from a few dozen
  // model types, so the LP stays small however many jobs are active.
  void Solve(const JobTimeView& view) {
    const int models = view.pool->num_models();
    const int columns = aware_ ? models : 1;
    // LP columns in model-name order: the LP has many optima, and which vertex the solver ends
    // at follows the column order, which must not be the order the cluster lists its models in.
    column_.assign(models, 0);
    if (aware_)
      for (int c = 0; c < models; ++c) column_[view.pool->name_order()[c]] = c;
    std::map<std::pair<int, std::vector<double>>, int> class_of;
    std::vector<int> job_class(view.jobs->size(), -1);
    std::vector<ShareClass> classes;
    for (int i : active_) {
      const Job& j = view.job(i);
      std::vector<double> v(columns, 0.0);
      bool runnable = false;
      for (int m = 0; m < models; ++m) {
        const GpuModel& gm = view.pool->model(m);
        const bool fits = gm.count >= j.spec.num_gpu &&
                          (gm.memory_gib <= 0 || j.spec.memory_gib <= gm.memory_gib);
        const double speed = fits ? Speed(j, m) : 0.0;
        if (aware_)
          v[column_[m]] = speed;
        else if (speed > 0)
          v[0] = 1.0;
        runnable |= speed > 0;
      }
      if (!runnable) continue;
      auto [it, fresh] = class_of.emplace(std::make_pair(j.spec.num_gpu, v),
                                          static_cast<int>(classes.size()));
      if (fresh) classes.push_back({0, j.spec.num_gpu, v});
      ++classes[it->second].jobs;
      job_class[i] = it->second;
    }
    if (classes.empty()) return;
    std::vector<int> capacity(columns, 0);
    for (int m = 0; m < models; ++m) capacity[column_[m]] += view.pool->model(m).count;
    absl::StatusOr<MaxMinShares> solved = SolveMaxMinShares(classes, capacity);
    if (!solved.ok()) return;
    const MaxMinShares& shares = *solved;
    for (int i : active_) {
      share_[i].clear();
      if (job_class[i] >= 0) share_[i] = shares.x[job_class[i]];
    }
  }

  double round_;
  bool aware_;
  double next_round_ = 0;
  double last_point_ = 0;
  std::vector<int> active_;
  std::vector<std::vector<double>> time_on_;  // per job, per model: seconds held so far
  std::vector<std::vector<double>> share_;    // per job, per LP column: X from the last round's LP
  std::vector<int> column_;  // per model: its LP column (name rank when aware, 0 when agnostic)
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-lp",
     .description = "Gavel's max-min fairness with its LP solved exactly each round, realised by "
                    "round priorities (OSDI'20)",
     .params = {{.name = "round_duration", .type = ParamType::kNumber, .default_value = 360.0,
                  .help = "seconds per round", .range = {.above = 0}},
                {"aware", ParamType::kBool, true, "heterogeneity-aware (false: agnostic)"}},
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(double r, p.Get<double>("round_duration"));
      ASSIGN_OR_RETURN(bool aware, p.Get<bool>("aware"));
      return std::unique_ptr<JobTimePolicy>(new GavelLp(r, aware));
    });

}  // namespace
}  // namespace gpufleet::jobtime
