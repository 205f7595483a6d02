// Gavel-style max-min fairness over rounds (Narayanan et al., "Heterogeneity-Aware Cluster
// Scheduling Policies for Deep Learning Workloads", OSDI 2020). Gavel solves an LP for allocation
// fractions X[job][model] maximising the minimum normalised throughput and realises it with
// round-based priorities (gavel-lp does that). This is a native greedy approximation, not the LP:
// at each round boundary (round_duration s, 360 as in Gavel) jobs are taken in increasing order
// of the normalised progress they have received per second in the system, weighted by their GPU
// count as Gavel's LP weights throughput (so a k-GPU job gets about 1/k of a 1-GPU job's time),
// until the GPUs are covered; between rounds freed GPUs are back-filled in the same order.
//  - aware=true: the progress is work done (reference seconds) over the job's throughput under
//    Gavel's equal share of the cluster (its speed averaged over the models by GPU count), and the
//    chosen jobs get models by comparative advantage (largest fastest/slowest speed ratio first,
//    each on its fastest model with room) -- Gavel's heterogeneity-aware max-min;
//  - aware=false: the progress is GPU time received, and every round draws each chosen job's model
//    afresh (in proportion to free GPUs), so jobs move between models as under Gavel's agnostic
//    rounds -- the heterogeneity-agnostic baseline Gavel compares against (LAS-like max-min);
//    sticky=true keeps a running job on the model it landed on instead (gpufleet's older baseline).
#include <algorithm>
#include <cmath>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/job_time_policy.h"

namespace gpufleet::jobtime {
namespace {

class GavelMaxMin : public JobTimePolicy {
 public:
  GavelMaxMin(double round, bool aware, bool sticky)
      : round_(round), aware_(aware), sticky_(sticky) {}

  void OnArrival(int job, const JobTimeView&) override { active_.push_back(job); }
  void OnFinish(int job, const JobTimeView&) override {
    active_.erase(std::find(active_.begin(), active_.end(), job));
  }
  double NextWakeup(const JobTimeView& view) const override {
    return active_.empty() ? kNever : next_round_;
  }

  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    const bool boundary = view.now >= next_round_ - 1e-9;
    if (boundary) next_round_ = std::floor(view.now / round_ + 1e-9) * round_ + round_;
    rate_.resize(view.jobs->size());
    const GpuPool& pool = *view.pool;
    for (int i : active_) {
      const Job& j = view.job(i);
      double age = std::max(view.now - j.spec.submit_time, 1e-9);
      if (aware_) {
        double equal = 0;  // throughput on an even share of every GPU
        for (int m = 0; m < pool.num_models(); ++m)
          equal += j.Speed(m) * pool.model(m).count / pool.total_gpus();
        rate_[i] = j.spec.num_gpu * view.WorkDone(i) / std::max(equal, 1e-12) / age;
      } else {
        rate_[i] = view.GpuTime(i) / age;
      }
    }
    std::sort(active_.begin(), active_.end(), [&](int a, int b) {
      if (rate_[a] != rate_[b]) return rate_[a] < rate_[b];
      const JobSpec& x = view.job(a).spec;
      const JobSpec& y = view.job(b).spec;
      return x.submit_time != y.submit_time ? x.submit_time < y.submit_time : a < b;
    });
    Filler fill(view, plan);
    if (!boundary) {
      // Mid-round: keep the round's jobs, back-fill freed GPUs.
      for (int i : *view.running) fill.Take(i, view.job(i).model);
      for (int i : active_) {
        if (fill.total_free() == 0) break;
        if (view.job(i).state == JobState::kPending) fill.TryPlace(i, Choice());
      }
      return;
    }
    // Pick the round's jobs by GPU count, then give models.
    std::vector<int> chosen;
    int gpus = fill.total_free();
    for (int i : active_) {
      int n = view.job(i).spec.num_gpu;
      if (n <= gpus) {
        chosen.push_back(i);
        gpus -= n;
      }
    }
    if (aware_) {
      auto advantage = [&](int i) {
        const Job& j = view.job(i);
        double hi = 0, lo = kNever;
        for (int m = 0; m < view.pool->num_models(); ++m) {
          hi = std::max(hi, j.Speed(m));
          if (j.Speed(m) > 0) lo = std::min(lo, j.Speed(m));
        }
        return lo > 0 && lo < kNever ? hi / lo : 1.0;
      };
      std::stable_sort(chosen.begin(), chosen.end(),
                       [&](int a, int b) { return advantage(a) > advantage(b); });
    }
    // A new round re-plans models: an aware job may move to a better model, an agnostic one
    // lands wherever this round's draw puts it (as Gavel's rounds), unless sticky.
    const ModelChoice boundary_choice =
        aware_ ? ModelChoice::kFastestMove
               : (sticky_ ? ModelChoice::kAgnostic : ModelChoice::kAgnosticMove);
    for (int i : chosen) fill.TryPlace(i, boundary_choice);
    // Jobs squeezed out by model boundaries give way to any other job that fits.
    for (int i : active_) {
      if (fill.total_free() == 0) break;
      if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) fill.TryPlace(i, Choice());
    }
    if (!aware_ && sticky_) KeepModels(view, Choice(), plan);
  }

 private:
  ModelChoice Choice() const { return aware_ ? ModelChoice::kFastest : ModelChoice::kAgnostic; }
  double round_;
  bool aware_;
  bool sticky_;
  double next_round_ = 0;
  std::vector<int> active_;
  std::vector<double> rate_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-maxmin",
     .description = "Gavel-style max-min fairness over rounds, greedy approximation of the LP "
                    "(OSDI'20)",
     .params = {{.name = "round_duration", .type = ParamType::kNumber, .default_value = 360.0,
                  .help = "seconds per round", .range = {.above = 0}},
                {"aware", ParamType::kBool, true, "heterogeneity-aware (false: agnostic)"},
                {"sticky", ParamType::kBool, false,
                 "agnostic only: a running job stays on the model it landed on"}},
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(double r, p.Get<double>("round_duration"));
      ASSIGN_OR_RETURN(bool aware, p.Get<bool>("aware"));
      ASSIGN_OR_RETURN(bool sticky, p.Get<bool>("sticky"));
      return std::unique_ptr<JobTimePolicy>(new GavelMaxMin(r, aware, sticky));
    });

}  // namespace
}  // namespace gpufleet::jobtime
