// Gavel's heterogeneity-aware max-min fairness with its LP solved exactly (Narayanan et al.,
// "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020, §4.1
// and §5), realised by the family's round mechanism (gavel_round_policy.h). Over the active jobs m
// and GPU models j it solves
//   maximise t  s.t.  t <= sum_j (T_mj / T_m^eq) X_mj     (every job's normalised throughput)
//                     sum_j X_mj <= 1                      (a job runs on one model at a time)
//                     sum_m n_m X_mj <= C_j                (n_m GPUs per job, C_j GPUs of model j)
//                     X >= 0,
// where T_mj is the job's speed on model j and T_m^eq its throughput under an equal share of the
// cluster (time share min(1, G / (jobs x n_m)) spread over the models by their GPU counts). In the
// Gavel-compatible mode it solves Gavel's own form instead (SolveGavelMaxMin). aware=false is
// Gavel's heterogeneity-agnostic max-min baseline (every model looks the same: speed 1), whose LP
// is degenerate: its centre spreads each job over the models, and the rounds move jobs between
// models as Gavel's do. packing=true is Gavel's max_min_fairness_packed (two jobs may share GPUs at
// their co-located rates; the Gavel-compatible mode only). gavel-maxmin is the cheaper greedy
// version.
#include "gpufleet/policies/gavel_lp.h"

#include <algorithm>
#include <map>
#include <utility>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/gavel_allocation_lp.h"
#include "gpufleet/policies/gavel_round_policy.h"
#include "gpufleet/policies/lp_centre.h"
#include "gpufleet/policies/lp_solver.h"

namespace gpufleet::jobtime {
namespace {

absl::Status CheckClasses(const std::vector<ShareClass>& classes, const std::vector<int>& capacity) {
  double gpus = 0;
  for (int c : capacity) gpus += c;
  for (const ShareClass& k : classes)
    if (k.speed.size() != capacity.size() || k.jobs < 1 || k.gpus_per_job < 1)
      return absl::InvalidArgumentError(
          "max-min shares: a class needs one speed per model, jobs >= 1 and gpus_per_job >= 1");
  if (classes.empty() || gpus <= 0)
    return absl::InvalidArgumentError("max-min shares: no classes or no GPUs");
  return absl::OkStatus();
}

MaxMinShares Unpack(const LpSolution& r, int classes, int models) {
  MaxMinShares out;
  out.t = r.x[classes * models];
  out.x.resize(classes);
  for (int k = 0; k < classes; ++k)
    out.x[k].assign(r.x.begin() + k * models, r.x.begin() + (k + 1) * models);
  return out;
}

}  // namespace

absl::StatusOr<MaxMinShares> SolveMaxMinShares(const std::vector<ShareClass>& classes,
                                               const std::vector<int>& capacity, bool centred) {
  RETURN_IF_ERROR(CheckClasses(classes, capacity));
  const int n = static_cast<int>(classes.size());
  const int models = static_cast<int>(capacity.size());
  double gpus = 0, jobs = 0;
  for (int c : capacity) gpus += c;
  for (const ShareClass& k : classes) jobs += k.jobs;
  // Columns: x[k][m] at k * models + m, then t.
  const int vars = n * models + 1;
  const int t = vars - 1;
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  CentreWeights weights;
  weights.columns.assign(vars, 1.0);
  weights.columns[t] = 0;  // an epigraph variable
  for (int k = 0; k < n; ++k) {
    const ShareClass& cls = classes[k];
    const double equal_time = std::min(1.0, gpus / (jobs * cls.gpus_per_job));
    double equal = 0;
    for (int m = 0; m < models; ++m) equal += cls.speed[m] * equal_time * capacity[m] / gpus;
    std::vector<double> fair(vars, 0.0), one(vars, 0.0);
    fair[t] = 1.0;
    for (int m = 0; m < models; ++m) {
      weights.columns[k * models + m] = cls.jobs;
      if (cls.speed[m] <= 0) continue;
      fair[k * models + m] = -cls.speed[m] / std::max(equal, 1e-12);
      one[k * models + m] = 1.0;
    }
    if (centred) {
      // A class's x on a model where it cannot run is in no row then: the centre leaves it at 0
      // (CLP's vertex does anyway) instead of spending capacity there.
      for (int m = 0; m < models; ++m)
        if (cls.speed[m] <= 0) weights.columns[k * models + m] = 0;
    }
    a.push_back(std::move(fair));
    b.push_back(0.0);
    a.push_back(std::move(one));
    b.push_back(1.0);
    weights.rows.push_back(cls.jobs);
    weights.rows.push_back(cls.jobs);
  }
  for (int m = 0; m < models; ++m) {
    std::vector<double> cap(vars, 0.0);
    for (int k = 0; k < n; ++k)
      if (!centred || classes[k].speed[m] > 0)
        cap[k * models + m] = static_cast<double>(classes[k].jobs) * classes[k].gpus_per_job;
    a.push_back(std::move(cap));
    b.push_back(std::max(0, capacity[m]));
    weights.rows.push_back(1.0);
  }
  std::vector<double> c(vars, 0.0);
  c[t] = 1.0;
  if (centred) {
    ASSIGN_OR_RETURN(LpSolution r, MaximizeLpCentred(a, b, c, weights));
    return Unpack(r, n, models);
  }
  ASSIGN_OR_RETURN(LpSolution r, MaximizeLp(a, b, c));
  return Unpack(r, n, models);
}

absl::StatusOr<MaxMinShares> SolveGavelMaxMin(const std::vector<ShareClass>& classes,
                                              const std::vector<int>& capacity) {
  RETURN_IF_ERROR(CheckClasses(classes, capacity));
  const int n = static_cast<int>(classes.size());
  const int models = static_cast<int>(capacity.size());
  double gpus = 0;
  for (int cap : capacity) gpus += cap;
  const int vars = n * models + 1;
  const int t = vars - 1;
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  CentreWeights weights;
  weights.columns.assign(vars, 1.0);
  weights.columns[t] = 0;
  for (int k = 0; k < n; ++k) {
    const ShareClass& cls = classes[k];
    double proportional = 0;
    for (int m = 0; m < models; ++m) proportional += cls.speed[m] * capacity[m] / gpus;
    if (!(proportional > 0))
      return absl::InvalidArgumentError("max-min shares: a class runs on no model");
    std::vector<double> fair(vars, 0.0), one(vars, 0.0);
    fair[t] = 1.0;
    for (int m = 0; m < models; ++m) {
      fair[k * models + m] = -cls.gpus_per_job * cls.speed[m] / proportional;
      one[k * models + m] = 1.0;
      weights.columns[k * models + m] = cls.jobs;
    }
    a.push_back(std::move(fair));
    b.push_back(0.0);
    a.push_back(std::move(one));
    b.push_back(1.0);
    weights.rows.push_back(cls.jobs);
    weights.rows.push_back(cls.jobs);
  }
  for (int m = 0; m < models; ++m) {
    std::vector<double> cap(vars, 0.0);
    for (int k = 0; k < n; ++k)
      cap[k * models + m] = static_cast<double>(classes[k].jobs) * classes[k].gpus_per_job;
    a.push_back(std::move(cap));
    b.push_back(std::max(0, capacity[m]));
    weights.rows.push_back(1.0);
  }
  std::vector<double> c(vars, 0.0);
  c[t] = 1.0;
  ASSIGN_OR_RETURN(LpSolution r, MaximizeLpCentred(a, b, c, weights));
  return Unpack(r, n, models);
}

namespace {

class GavelLp : public GavelRoundPolicy {
 public:
  using GavelRoundPolicy::GavelRoundPolicy;

 protected:
  // Jobs with the same GPU count and rates share one set of variables: the LP is symmetric in
  // them, so the centre (and some vertex) gives them equal shares, and traces draw jobs from a
  // few dozen types, so the LP stays small however many jobs are active.
  absl::StatusOr<Allocation> Allocate(const AllocationInput& in) override {
    if (!in.pairs.empty()) return SolvePacked(in);
    std::map<std::pair<int, std::vector<double>>, int> class_of;
    std::vector<ShareClass> classes;
    std::vector<int> job_class;
    for (const AllocationJob& j : in.jobs) {
      auto [it, fresh] =
          class_of.emplace(std::make_pair(j.gpus, j.rate), static_cast<int>(classes.size()));
      if (fresh) classes.push_back({0, j.gpus, j.rate});
      ++classes[it->second].jobs;
      job_class.push_back(it->second);
    }
    absl::StatusOr<MaxMinShares> solved = in.gavel
                                              ? SolveGavelMaxMin(classes, in.capacity)
                                              : SolveMaxMinShares(classes, in.capacity, in.centred);
    if (!solved.ok()) return solved.status();
    Allocation x;
    for (int k : job_class) x.push_back(solved->x[k]);
    return x;
  }
  // Solved every round in the default mode: CLP's vertex (the centre when agnostic).
  bool CentredByDefault() const override { return false; }

 private:
  // Gavel's max_min_fairness_packed (MaxMinFairnessPolicyWithPacking): SolveGavelMaxMin's LP
  // with a variable per packed pair too, a job's throughput counting its pairs' co-located
  // rates, its proportional throughput its rates alone; at the centre of the optimal face.
  static absl::StatusOr<Allocation> SolvePacked(const AllocationInput& in) {
    AllocationLp lp(in, 1);
    const int t = lp.extra(0);
    // t keeps a barrier of its own (t > 0), unlike the unpacked LP's epigraph variable: the pairs
    // make every row long, and the centre's Newton systems (barrier_system.h) need every column
    // in a short row or with a barrier term. The centre of the optimal face does not move: t is
    // the same all over it.
    double gpus = 0;
    for (int c : in.capacity) gpus += c;
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      const AllocationJob& job = in.jobs[j];
      double proportional = 0;
      for (size_t c = 0; c < in.capacity.size(); ++c)
        proportional += job.rate[c] * in.capacity[c] / gpus;
      if (!(proportional > 0))
        return absl::InvalidArgumentError("max-min shares: a job runs on no model");
      std::vector<double> row(lp.vars(), 0.0);
      row[t] = 1.0;
      lp.AddThroughput(in, static_cast<int>(j), -job.gpus / proportional, &row);
      lp.AddRow(std::move(row), 0.0);
    }
    std::vector<double> c(lp.vars(), 0.0);
    c[t] = 1.0;
    ASSIGN_OR_RETURN(LpSolution r, MaximizeLpCentred(lp.a(), lp.b(), c, lp.weights()));
    return lp.Unpack(r.x);
  }
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-lp",
     .description = "Gavel's max-min fairness with its LP solved exactly, realised by round "
                    "priorities (OSDI'20)",
     .params = GavelRoundParams(/*sticky=*/true, /*packing=*/true),
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(GavelRoundPolicy::Options o, GavelRoundOptions(p));
      return std::unique_ptr<JobTimePolicy>(new GavelLp(o));
    });

}  // namespace
}  // namespace gpufleet::jobtime
