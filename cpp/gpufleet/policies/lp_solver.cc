#include "gpufleet/policies/lp_solver.h"

#include <ClpSimplex.hpp>
#include <CoinError.hpp>
#include <CoinFinite.hpp>
#include <CoinMessageHandler.hpp>

#include <algorithm>
#include <cmath>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace gpufleet::jobtime {
namespace {

// The core must never write to its host's stdout: on top of log level 0, this handler drops any
// message CLP would print whatever the level.
class LpSolverQuietHandler : public CoinMessageHandler {
 public:
  int print() override { return 0; }
  CoinMessageHandler* clone() const override { return new LpSolverQuietHandler(*this); }
};

// The solution's rows may exceed b by CLP's feasibility tolerance (1e-7 on the scaled problem);
// anything much larger means the solver went wrong, and the caller must not use the point.
constexpr double kLpSolverRowSlack = 1e-6;

absl::Status LpSolverCheckEntry(double v, const char* name, int i, int j) {
  if (std::isfinite(v) && std::fabs(v) <= kLpMaxMagnitude) return absl::OkStatus();
  const std::string where =
      j < 0 ? absl::StrFormat("%s[%d]", name, i) : absl::StrFormat("%s[%d][%d]", name, i, j);
  if (!std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrFormat("LP: %s must be finite, got %g", where, v));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "LP: %s = %g exceeds %g in magnitude (the solver would read it as infinite)", where, v,
      kLpMaxMagnitude));
}

absl::StatusOr<LpSolution> LpSolverRun(const std::vector<std::vector<double>>& a,
                                       const std::vector<double>& b, const std::vector<double>& c,
                                       int max_iterations) {
  const int rows = static_cast<int>(b.size());
  const int cols = static_cast<int>(c.size());
  // Column-major sparse copy of A, as CLP stores it, without the columns that are all zero: such
  // an x_k is 0 at the optimum when c_k <= 0 and makes a feasible LP unbounded when c_k > 0. CLP
  // 1.17 left to itself can call a feasible LP infeasible when such a column has c_k > 0 and the
  // origin is infeasible.
  std::vector<int> column;  // CLP's columns -> ours
  std::vector<CoinBigIndex> start = {0};
  std::vector<int> index;
  std::vector<double> value, cost;
  bool empty_column_gains = false;
  for (int k = 0; k < cols; ++k) {
    const size_t before = index.size();
    for (int r = 0; r < rows; ++r) {
      if (a[r][k] != 0) {
        index.push_back(r);
        value.push_back(a[r][k]);
      }
    }
    if (index.size() == before) {
      empty_column_gains |= c[k] > 0;
      continue;
    }
    column.push_back(k);
    cost.push_back(c[k]);
    start.push_back(static_cast<CoinBigIndex>(index.size()));
  }
  const int used = static_cast<int>(column.size());
  const std::vector<double> col_lower(used, 0.0), col_upper(used, COIN_DBL_MAX);
  const std::vector<double> row_lower(rows, -COIN_DBL_MAX);

  LpSolverQuietHandler quiet;  // outlives `model`, which only borrows it
  ClpSimplex model;
  model.passInMessageHandler(&quiet);
  model.setLogLevel(0);
  model.loadProblem(used, rows, start.data(), index.data(), value.data(), col_lower.data(),
                    col_upper.data(), cost.data(), row_lower.data(), b.data());
  model.setOptimizationDirection(-1);  // maximise
  model.setMaximumIterations(max_iterations);
  model.dual();

  if (model.isProvenPrimalInfeasible()) {
    return absl::FailedPreconditionError("LP: infeasible (no x >= 0 satisfies A x <= b)");
  }
  if (model.isProvenDualInfeasible() || (empty_column_gains && model.isProvenOptimal())) {
    return absl::FailedPreconditionError("LP: unbounded (c.x grows without limit)");
  }
  if (model.isIterationLimitReached()) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("LP: iteration limit (%d) reached before an optimum", max_iterations));
  }
  if (!model.isProvenOptimal()) {
    return absl::InternalError(absl::StrFormat(
        "LP: CLP stopped without an optimum (status %d, secondary %d)", model.status(),
        model.secondaryStatus()));
  }
  LpSolution out;
  out.iterations = model.numberIterations();
  const double* sol = model.primalColumnSolution();
  out.x.assign(cols, 0.0);
  for (int j = 0; j < used; ++j) {
    const int k = column[j];
    out.x[k] = std::max(0.0, sol[j]);  // CLP may return -1e-12 for a column at its bound
    out.objective += c[k] * out.x[k];
  }
  for (int r = 0; r < rows; ++r) {
    double lhs = 0, scale = std::max(1.0, std::fabs(b[r]));
    for (int k = 0; k < cols; ++k) {
      lhs += a[r][k] * out.x[k];
      scale = std::max(scale, std::fabs(a[r][k] * out.x[k]));
    }
    if (lhs - b[r] > kLpSolverRowSlack * scale) {
      return absl::InternalError(absl::StrFormat(
          "LP: CLP's optimum violates row %d (A x = %.17g > b = %.17g)", r, lhs, b[r]));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<LpSolution> MaximizeLp(const std::vector<std::vector<double>>& a,
                                      const std::vector<double>& b, const std::vector<double>& c,
                                      int max_iterations) {
  const int rows = static_cast<int>(b.size());
  const int cols = static_cast<int>(c.size());
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("LP: A has %d rows but b has %d entries", a.size(), b.size()));
  }
  if (max_iterations < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("LP: max_iterations must be >= 0, got %d", max_iterations));
  }
  for (int r = 0; r < rows; ++r) {
    if (a[r].size() != c.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "LP: row %d of A has %d entries but c has %d", r, a[r].size(), c.size()));
    }
    for (int k = 0; k < cols; ++k) {
      if (absl::Status s = LpSolverCheckEntry(a[r][k], "A", r, k); !s.ok()) return s;
    }
    if (absl::Status s = LpSolverCheckEntry(b[r], "b", r, -1); !s.ok()) return s;
  }
  for (int k = 0; k < cols; ++k) {
    if (absl::Status s = LpSolverCheckEntry(c[k], "c", k, -1); !s.ok()) return s;
  }
  // CLP reports internal failures by throwing CoinError (not a std::exception); none may escape
  // into the policies' callers.
  try {
    return LpSolverRun(a, b, c, max_iterations);
  } catch (const CoinError& e) {
    return absl::InternalError(absl::StrFormat("LP: CLP failed in %s::%s: %s", e.className(),
                                               e.methodName(), e.message()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("LP: out of memory for %d rows x %d columns", rows, cols));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrFormat("LP: CLP failed: %s", e.what()));
  }
}

}  // namespace gpufleet::jobtime
