#include "gpufleet/policies/lp_simplex.h"

#include <algorithm>
#include <cmath>

namespace gpufleet::jobtime {
namespace {
constexpr double kPivotEps = 1e-9;
constexpr int kDegenerateBeforeBland = 50;
}  // namespace

absl::StatusOr<LpSolution> MaximizeLp(const std::vector<std::vector<double>>& a,
                                      const std::vector<double>& b, const std::vector<double>& c,
                                      int max_pivots) {
  LpSolution out;
  const int rows = static_cast<int>(b.size());
  const int vars = static_cast<int>(c.size());
  if (static_cast<int>(a.size()) != rows) {
    return absl::InvalidArgumentError("bad input: A and b differ in rows");
  }
  for (int r = 0; r < rows; ++r) {
    if (static_cast<int>(a[r].size()) != vars) {
      return absl::InvalidArgumentError("bad input: a row of A has the wrong length");
    }
    if (!(b[r] >= 0) || !std::isfinite(b[r])) {
      return absl::InvalidArgumentError("bad input: b must be finite and >= 0");
    }
  }
  // Tableau: rows x (vars + slacks + rhs); the objective row holds reduced costs (-c at start).
  const int cols = vars + rows + 1;
  std::vector<double> t(static_cast<size_t>(rows + 1) * cols, 0.0);
  auto at = [&](int r, int k) -> double& { return t[static_cast<size_t>(r) * cols + k]; };
  std::vector<int> basis(rows);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < vars; ++k) at(r, k) = a[r][k];
    at(r, vars + r) = 1.0;
    at(r, cols - 1) = b[r];
    basis[r] = vars + r;
  }
  for (int k = 0; k < vars; ++k) at(rows, k) = -c[k];

  int degenerate = 0;
  for (;;) {
    const bool bland = degenerate >= kDegenerateBeforeBland;
    int enter = -1;
    double most = -kPivotEps;
    for (int k = 0; k < cols - 1; ++k) {
      double rc = at(rows, k);
      if (rc < -kPivotEps && (bland ? enter < 0 : rc < most)) {
        enter = k;
        most = rc;
        if (bland) break;
      }
    }
    if (enter < 0) break;  // optimal
    if (out.pivots >= max_pivots) {
      return absl::ResourceExhaustedError("pivot limit");
    }
    int leave = -1;
    double best = 0;
    for (int r = 0; r < rows; ++r) {
      double p = at(r, enter);
      if (p <= kPivotEps) continue;
      double ratio = at(r, cols - 1) / p;
      if (leave < 0 || ratio < best - kPivotEps ||
          (std::fabs(ratio - best) <= kPivotEps && basis[r] < basis[leave])) {
        leave = r;
        best = ratio;
      }
    }
    if (leave < 0) {
      return absl::FailedPreconditionError("unbounded");
    }
    degenerate = best <= kPivotEps ? degenerate + 1 : 0;
    const double p = at(leave, enter);
    for (int k = 0; k < cols; ++k) at(leave, k) /= p;
    for (int r = 0; r <= rows; ++r) {
      if (r == leave) continue;
      const double f = at(r, enter);
      if (f == 0) continue;
      for (int k = 0; k < cols; ++k) at(r, k) -= f * at(leave, k);
    }
    basis[leave] = enter;
    ++out.pivots;
  }
  out.x.assign(vars, 0.0);
  for (int r = 0; r < rows; ++r)
    if (basis[r] < vars) out.x[basis[r]] = std::max(0.0, at(r, cols - 1));
  out.objective = 0;
  for (int k = 0; k < vars; ++k) out.objective += c[k] * out.x[k];
  return out;
}

}  // namespace gpufleet::jobtime
