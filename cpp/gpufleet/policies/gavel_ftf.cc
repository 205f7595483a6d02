// Gavel's finish-time fairness (Narayanan et al., OSDI 2020, §4.2, after Themis;
// finish_time_fairness.py, FinishTimeFairnessPolicyWithPerf): minimise the largest
//   rho_j = (age_j + remaining_j / sum_m rate_jm X_jm) / (isolated_time_j + remaining_j / iso_j),
// where iso_j is the job's rate on its "isolated" share of the cluster (capacity_m / jobs /
// gpus_j of each model, the row scaled down to sum to at most 1) and isolated_time_j adds up,
// solve after solve, the work done since the previous solve divided by the iso_j of then. The
// program is not linear in X, but for a fixed rho the constraints are: every job needs
// sum_m rate_jm X_jm >= remaining_j / (rho isolated_j - age_j). The smallest feasible rho is found
// by Dinkelbach's iteration over LPs (CLP), and the allocation is the centre of the set that rho
// leaves (the centre of the optimal face of max s: sum_m rate_jm X_jm >= s x that need), where
// Gavel's interior-point solver ends near. aware=false gives every model the job's reference-model rate
// (Gavel's v100). packing=true is Gavel's finish_time_fairness_packed: the same program over the
// allocation LP with packed pairs, a job's rate counting its pairs' co-located rates. Realised by
// the family's rounds (gavel_round_policy.h).
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/gavel_allocation_lp.h"
#include "gpufleet/policies/gavel_round_policy.h"
#include "gpufleet/policies/lp_centre.h"
#include "gpufleet/policies/lp_solver.h"

namespace gpufleet::jobtime {
namespace {

// Dinkelbach steps at most (each one LP); they converge in a handful.
constexpr int kIterations = 30;

class GavelFtf : public GavelRoundPolicy {
 public:
  using GavelRoundPolicy::GavelRoundPolicy;

 protected:
  absl::StatusOr<Allocation> Allocate(const AllocationInput& in) override {
    const int n = static_cast<int>(in.jobs.size());
    const int columns = static_cast<int>(in.capacity.size());
    // Isolated shares and rates, and the isolated time so far.
    std::vector<double> iso(n, 0.0), isolated(n, 0.0);
    std::unordered_map<int, std::pair<double, double>> now;  // job -> (remaining, iso)
    for (int j = 0; j < n; ++j) {
      const AllocationJob& job = in.jobs[j];
      std::vector<double> share(columns);
      double sum = 0;
      for (int c = 0; c < columns; ++c) {
        share[c] = static_cast<double>(in.capacity[c]) / n / job.gpus;
        sum += share[c];
      }
      for (int c = 0; c < columns; ++c) iso[j] += job.rate[c] * share[c] / std::max(sum, 1.0);
      double& cumulative = isolated_time_[job.job];
      if (auto it = previous_.find(job.job); it != previous_.end() && it->second.second > 0)
        cumulative += (it->second.first - job.remaining) / it->second.second;
      isolated[j] = cumulative + (iso[j] > 0 ? job.remaining / iso[j] : 0);
      now[job.job] = {job.remaining, iso[j]};
    }
    previous_ = std::move(now);
    // Jobs that can run nowhere take no part (their rho cannot be bounded).
    auto runs = [&](int j) {
      for (int c = 0; c < columns; ++c)
        if (in.jobs[j].rate[c] > 0) return true;
      return false;
    };
    auto need = [&](int j, double rho) {
      return in.jobs[j].remaining / (rho * isolated[j] - in.jobs[j].age);
    };
    // rho of an allocation: the largest over the jobs that run somewhere.
    auto rho_of = [&](const Allocation& x) {
      double worst = 0;
      for (int j = 0; j < n; ++j) {
        if (!runs(j)) continue;
        const double rate = AllocationLp::Throughput(in, x, j);
        worst = std::max(worst, (in.jobs[j].age + in.jobs[j].remaining / rate) / isolated[j]);
      }
      return worst;
    };
    // Dinkelbach's iteration for the min-max ratio: from a feasible rho (the isolated
    // allocation's), the allocation that gives every job the most room over its need at rho has
    // a smaller worst rho; repeat until it stops falling (superlinear, a handful of LPs).
    double hi = rho_of(Isolated(in));
    if (!std::isfinite(hi)) return Isolated(in);
    for (int k = 0; k < kIterations; ++k) {
      AllocationLp lp = Lp(in, [&](int j) { return need(j, hi); }, runs, 1);
      std::vector<double> c(lp.vars(), 0.0);
      c[lp.extra(0)] = 1;
      absl::StatusOr<LpSolution> r = MaximizeLp(lp.a(), lp.b(), c);
      if (!r.ok()) break;
      const double next = rho_of(lp.Unpack(r->x));
      if (!(next < hi * (1 - 1e-12))) break;
      hi = next;
    }
    // max s s.t. each job reaches s x its need at rho = hi: s* = 1 on the optimal face.
    AllocationLp lp = Lp(in, [&](int j) { return need(j, hi); }, runs, 1);
    // With packed pairs s keeps a barrier (s > 0; s = 1 all over the optimal face, so its centre
    // does not move): every row is long then, and the centre's Newton systems need it.
    if (in.pairs.empty()) lp.Free(lp.extra(0));
    std::vector<double> c(lp.vars(), 0.0);
    c[lp.extra(0)] = 1;
    absl::StatusOr<LpSolution> r = MaximizeLpCentred(lp.a(), lp.b(), c, lp.weights());
    if (!r.ok()) return Isolated(in);
    return lp.Unpack(r->x);
  }
  AgnosticRate agnostic_rate() const override { return AgnosticRate::kReference; }

 private:
  // The allocation LP with a row per running job: its rate >= need(j) (times the trailing
  // variable s when `scaled`, written as s - rate / need <= 0).
  template <typename Need, typename Runs>
  static AllocationLp Lp(const AllocationInput& in, Need need, Runs runs, int scaled) {
    AllocationLp lp(in, scaled);
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      if (!runs(static_cast<int>(j))) continue;
      const double d = need(static_cast<int>(j));
      std::vector<double> row(lp.vars(), 0.0);
      lp.AddThroughput(in, static_cast<int>(j), -1.0, &row, scaled ? d : 1.0);
      if (scaled) {
        row[lp.extra(0)] = 1.0;
        lp.AddRow(std::move(row), 0.0);
      } else {
        lp.AddRow(std::move(row), -d);
      }
    }
    return lp;
  }

  // Gavel's fallback when the solver gives nothing: the isolated allocation.
  static Allocation Isolated(const AllocationInput& in) {
    const int n = static_cast<int>(in.jobs.size());
    Allocation x(n + in.pairs.size(), std::vector<double>(in.capacity.size(), 0.0));
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (size_t c = 0; c < in.capacity.size(); ++c) {
        x[j][c] = static_cast<double>(in.capacity[c]) / n / in.jobs[j].gpus;
        sum += x[j][c];
      }
      for (double& v : x[j]) v /= std::max(sum, 1.0);
    }
    return x;
  }

  std::unordered_map<int, double> isolated_time_;                // per job
  std::unordered_map<int, std::pair<double, double>> previous_;  // per job: remaining, iso
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-ftf",
     .description = "Gavel's finish-time fairness allocation, realised by round priorities "
                    "(OSDI'20)",
     .params = GavelRoundParams(/*sticky=*/true, /*packing=*/true),
     .traits = {.needs_durations = true, .preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(GavelRoundPolicy::Options o, GavelRoundOptions(p));
      return std::unique_ptr<JobTimePolicy>(new GavelFtf(o));
    });

}  // namespace
}  // namespace gpufleet::jobtime
