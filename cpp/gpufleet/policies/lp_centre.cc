#include "gpufleet/policies/lp_centre.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/barrier_system.h"

namespace gpufleet::jobtime {
namespace {

// The path stops once the barrier's duality gap (total weight / t) is this small relative to the
// optimum: ECOS's own default tolerances are 1e-8.
constexpr double kGapTolerance = 1e-9;
constexpr int kMaxNewtonSteps = 2000;
// A Newton decrement below which a step that no longer shrinks it (or cannot be taken) means x is
// centred as well as rounding allows.
constexpr double kDecrementFloor = 1e-3;
// Columns up to which phase I has a row per barrier column (see MaximizeLpCentred).
constexpr int kRowPerColumnUpTo = 1500;

struct SparseRow {
  std::vector<int> index;
  std::vector<double> value;
  double b = 0;
  double weight = 1;
};

class Barrier {
 public:
  Barrier(std::vector<SparseRow> rows, std::vector<double> c, std::vector<double> column_weight)
      : rows_(std::move(rows)), c_(std::move(c)), column_weight_(std::move(column_weight)),
        n_(static_cast<int>(c_.size())), shape_(Shape(rows_)),
        system_(shape_, n_, FreeColumns(column_weight_)) {}

  // The barrier objective t c.x + sum w log s + sum v log x; -inf outside the interior.
  double Value(const std::vector<double>& x, double t) const {
    double f = 0;
    for (int k = 0; k < n_; ++k) {
      f += t * c_[k] * x[k];
      if (column_weight_[k] > 0) {
        if (!(x[k] > 0)) return -INFINITY;
        f += column_weight_[k] * std::log(x[k]);
      }
    }
    for (const SparseRow& r : rows_) {
      const double s = Slack(r, x);
      if (!(s > 0)) return -INFINITY;
      f += r.weight * std::log(s);
    }
    return f;
  }

  // Newton steps at barrier parameter t until the decrement is negligible. False if a step could
  // not be computed or taken (the point is then as good as rounding allows).
  bool Centre(std::vector<double>& x, double t, int* steps) const {
    std::vector<double> h(rows_.size()), diagonal(n_), g(n_), trial(n_);
    double previous = INFINITY;
    for (int iter = 0; iter < 100; ++iter) {
      if (++*steps > kMaxNewtonSteps) return false;
      for (int k = 0; k < n_; ++k) {
        g[k] = t * c_[k];
        diagonal[k] = 0;
        if (column_weight_[k] > 0) {
          g[k] += column_weight_[k] / x[k];
          diagonal[k] = column_weight_[k] / (x[k] * x[k]);
        }
      }
      for (size_t i = 0; i < rows_.size(); ++i) {
        const SparseRow& r = rows_[i];
        const double s = Slack(r, x);
        const double w1 = r.weight / s;
        h[i] = w1 / s;
        for (size_t p = 0; p < r.index.size(); ++p) g[r.index[p]] -= w1 * r.value[p];
      }
      std::vector<double> d = g;
      if (!system_.Solve(h, diagonal, d)) return false;
      double decrement = 0;
      for (int k = 0; k < n_; ++k) decrement += g[k] * d[k];
      // The system is positive definite: a clearly negative decrement means its solve lost every
      // digit (the barrier's weights span too many orders of magnitude), not that x is centred.
      if (!std::isfinite(decrement) || decrement < -1e-12) return false;
      if (decrement <= 1e-12) return true;
      const double f0 = Value(x, t);
      double step = 1;
      for (;;) {
        for (int k = 0; k < n_; ++k) trial[k] = x[k] + step * d[k];
        const double f1 = Value(trial, t);
        if (f1 >= f0 + 0.25 * step * decrement) break;
        step *= 0.5;
        if (step < 1e-12) return decrement < kDecrementFloor;  // no better point to rounding
      }
      x.swap(trial);
      // Centred, or as centred as rounding lets the steps get (the decrement stops shrinking at a
      // floor set by the solve's accuracy near the optimum).
      if (decrement < 1e-9 || (decrement < kDecrementFloor && decrement > 0.5 * previous)) return true;
      previous = decrement;
    }
    return false;
  }

 private:
  static double Slack(const SparseRow& r, const std::vector<double>& x) {
    double s = r.b;
    for (size_t p = 0; p < r.index.size(); ++p) s -= r.value[p] * x[r.index[p]];
    return s;
  }

  static std::vector<BarrierRow> Shape(const std::vector<SparseRow>& rows) {
    std::vector<BarrierRow> out;
    for (const SparseRow& r : rows) out.push_back({r.index, r.value});
    return out;
  }
  static std::vector<char> FreeColumns(const std::vector<double>& weight) {
    std::vector<char> out;
    for (double w : weight) out.push_back(w == 0);
    return out;
  }

  std::vector<SparseRow> rows_;
  std::vector<double> c_;
  std::vector<double> column_weight_;
  int n_;
  std::vector<BarrierRow> shape_;
  BarrierSystem system_;  // reads shape_
};

}  // namespace

absl::StatusOr<LpSolution> MaximizeLpCentred(const std::vector<std::vector<double>>& a,
                                             const std::vector<double>& b,
                                             const std::vector<double>& c,
                                             const CentreWeights& weights) {
  const int rows = static_cast<int>(b.size());
  const int n = static_cast<int>(c.size());
  if (!weights.rows.empty() && static_cast<int>(weights.rows.size()) != rows)
    return absl::InvalidArgumentError(absl::StrFormat(
        "LP centre: %d row weights for %d rows", weights.rows.size(), rows));
  if (!weights.columns.empty() && static_cast<int>(weights.columns.size()) != n)
    return absl::InvalidArgumentError(absl::StrFormat(
        "LP centre: %d column weights for %d columns", weights.columns.size(), n));
  for (double w : weights.rows)
    if (!(w > 0) || !std::isfinite(w))
      return absl::InvalidArgumentError("LP centre: row weights must be finite and > 0");
  for (double w : weights.columns)
    if (!(w >= 0) || !std::isfinite(w))
      return absl::InvalidArgumentError("LP centre: column weights must be finite and >= 0");
  // The optimum (and every check on the input) from the simplex solver.
  ASSIGN_OR_RETURN(LpSolution vertex, MaximizeLp(a, b, c));
  if (n == 0) return vertex;

  // Rows as sparse vectors scaled to unit length (the centre does not change; Newton's systems are
  // better conditioned). Columns in no row stay at the vertex's value (0: c_k <= 0 there).
  std::vector<char> in_a_row(n, 0);
  std::vector<SparseRow> sparse;
  for (int r = 0; r < rows; ++r) {
    SparseRow row;
    double norm = 0;
    for (int k = 0; k < n; ++k) {
      if (a[r][k] == 0) continue;
      row.index.push_back(k);
      row.value.push_back(a[r][k]);
      norm += a[r][k] * a[r][k];
      in_a_row[k] = 1;
    }
    if (row.index.empty()) continue;  // 0 <= b_r, which the vertex showed holds
    norm = std::sqrt(norm);
    for (double& v : row.value) v /= norm;
    row.b = b[r] / norm;
    row.weight = weights.rows.empty() ? 1.0 : weights.rows[r];
    sparse.push_back(std::move(row));
  }
  std::vector<int> used;  // our columns -> the LP's
  std::vector<int> column_of(n, -1);
  for (int k = 0; k < n; ++k)
    if (in_a_row[k]) {
      column_of[k] = static_cast<int>(used.size());
      used.push_back(k);
    }
  const int m = static_cast<int>(used.size());
  if (m == 0) return vertex;
  for (SparseRow& row : sparse)
    for (int& k : row.index) k = column_of[k];
  std::vector<double> cost(m), column_weight(m);
  double total_weight = 0;
  for (int j = 0; j < m; ++j) {
    cost[j] = c[used[j]];
    column_weight[j] = weights.columns.empty() ? 1.0 : weights.columns[used[j]];
    total_weight += column_weight[j];
  }
  for (const SparseRow& row : sparse) total_weight += row.weight;

  // Phase I: the point farthest inside every barrier constraint (max r: rows' slack >= r, barrier
  // columns >= r, r <= 1). Up to kRowPerColumnUpTo columns with a row per barrier column; above,
  // written in y = x - r on the barrier columns (y >= 0), which needs only the LP's rows (a packed
  // allocation LP has thousands of columns). The two have the same optimum but may end at other
  // vertices, hence other starts of the path.
  const bool shifted = m > kRowPerColumnUpTo;
  std::vector<std::vector<double>> pa;
  std::vector<double> pb;
  for (const SparseRow& row : sparse) {
    std::vector<double> line(m + 1, 0.0);
    line[m] = 1.0;
    for (size_t p = 0; p < row.index.size(); ++p) {
      line[row.index[p]] = row.value[p];
      if (shifted && column_weight[row.index[p]] > 0) line[m] += row.value[p];
    }
    pa.push_back(std::move(line));
    pb.push_back(row.b);
  }
  for (int j = 0; j < m && !shifted; ++j) {
    if (column_weight[j] == 0) continue;
    std::vector<double> line(m + 1, 0.0);
    line[j] = -1;
    line[m] = 1;
    pa.push_back(std::move(line));
    pb.push_back(0);
  }
  {
    std::vector<double> line(m + 1, 0.0);
    line[m] = 1;
    pa.push_back(std::move(line));
    pb.push_back(1);
  }
  std::vector<double> pc(m + 1, 0.0);
  pc[m] = 1;
  ASSIGN_OR_RETURN(LpSolution inside, MaximizeLp(pa, pb, pc));
  const double depth = inside.x[m];
  if (!(depth > 1e-10))
    return absl::FailedPreconditionError(
        "LP centre: the feasible set has no interior point (no central path to follow)");
  std::vector<double> x(inside.x.begin(), inside.x.begin() + m);
  for (int j = 0; j < m && shifted; ++j)
    if (column_weight[j] > 0) x[j] += depth;
  // Start from a point strictly inside, also for the columns without a barrier of their own.
  Barrier barrier(std::move(sparse), cost, column_weight);
  int steps = 0;
  double optimum = 0, here = 0;
  bool has_objective = false;
  for (int j = 0; j < m; ++j) {
    optimum += cost[j] * vertex.x[used[j]];
    here += cost[j] * x[j];
    has_objective |= cost[j] != 0;
  }
  if (!has_objective) {
    barrier.Centre(x, 0.0, &steps);
  } else {
    // t runs over a grid fixed by the LP alone, unit x 8^k, so that every start ends at the same
    // t; the first is the grid point at or above the start's own scale.
    const double scale = std::max(1.0, std::fabs(optimum));
    const double unit = total_weight / scale;
    const double start_t = total_weight / std::max(optimum - here, 1e-6 * scale);
    double t = unit * std::pow(8.0, std::ceil(std::log(start_t / unit) / std::log(8.0) - 1e-9));
    barrier.Centre(x, t, &steps);
    // The path's point at the last t whose centring converged: a step that could not be solved
    // leaves x off the path, at a point that depends on where the path started.
    std::vector<double> centred = x;
    while (total_weight / t > kGapTolerance * scale) {
      t *= 8;
      if (!barrier.Centre(x, t, &steps)) {
        x = centred;
        break;
      }
      centred = x;
    }
  }
  if (!(barrier.Value(x, 0.0) > -INFINITY))
    return absl::InternalError("LP centre: the path left the feasible set");
  LpSolution out;
  out.iterations = vertex.iterations + steps;
  out.x.assign(n, 0.0);
  for (int k = 0; k < n; ++k) out.x[k] = column_of[k] >= 0 ? x[column_of[k]] : vertex.x[k];
  for (int k = 0; k < n; ++k) out.objective += c[k] * out.x[k];
  return out;
}

}  // namespace gpufleet::jobtime
