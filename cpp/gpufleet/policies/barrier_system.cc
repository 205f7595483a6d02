#include "gpufleet/policies/barrier_system.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace gpufleet::jobtime {
namespace {

// A row with more entries than this is long (Woodbury); a column in more short rows than this is
// shared (Schur). Below kDenseBelow columns the dense factorisation is cheap enough and more
// accurate near the optimum (the block elimination loses digits there); with a group above
// kLargestGroup columns it is as cheap.
constexpr size_t kLongRow = 24;
constexpr int kSharedColumn = 24;
constexpr int kDenseBelow = 400;
constexpr size_t kLargestGroup = 96;
// Rows that the all-Woodbury layout takes at most (its dense system is rows x rows).
constexpr size_t kMostLongRows = 2000;

// Cholesky factor of a symmetric positive definite n x n matrix (row-major, lower triangle used),
// in place; a pivot that is not positive becomes a tiny ridge (a direction flat to rounding).
bool Factor(std::vector<double>& a, int n) {
  double ridge = 0;
  for (int i = 0; i < n; ++i) ridge = std::max(ridge, std::fabs(a[i * n + i]));
  ridge = std::max(ridge * 1e-14, 1e-300);
  for (int j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) d = ridge;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (int k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = v / d;
    }
  }
  return std::isfinite(a[(n - 1) * n + (n - 1)]);
}

// Solves L L^T x = b in place with a Factor()ed matrix; `stride` steps between b's entries.
void Substitute(const std::vector<double>& l, int n, double* b, int stride = 1) {
  for (int i = 0; i < n; ++i) {
    double v = b[i * stride];
    for (int k = 0; k < i; ++k) v -= l[i * n + k] * b[k * stride];
    b[i * stride] = v / l[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    double v = b[i * stride];
    for (int k = i + 1; k < n; ++k) v -= l[k * n + i] * b[k * stride];
    b[i * stride] = v / l[i * n + i];
  }
}

int Find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

BarrierSystem::BarrierSystem(const std::vector<BarrierRow>& rows, int columns,
                             const std::vector<char>& free_columns)
    : rows_(rows), n_(columns) {
  if (n_ < kDenseBelow) return;
  if (Group(free_columns)) return;
  // The short rows join too many columns (a packed allocation LP's rows join every pair of a few
  // jobs): every row by Woodbury then, over a diagonal that needs no free column.
  if (std::find(free_columns.begin(), free_columns.end(), 1) != free_columns.end() ||
      rows.size() > kMostLongRows)
    return;
  long_rows_.resize(rows.size());
  std::iota(long_rows_.begin(), long_rows_.end(), 0);
  short_rows_.clear();
  shared_.clear();
  shared_pos_.assign(n_, -1);
  groups_.assign(n_, {});
  group_of_.assign(n_, 0);
  pos_in_group_.assign(n_, 0);
  for (int k = 0; k < n_; ++k) {
    groups_[k] = {k};
    group_of_[k] = k;
  }
  dense_ = false;
}

bool BarrierSystem::Group(const std::vector<char>& free_columns) {
  const std::vector<BarrierRow>& rows = rows_;
  for (int r = 0; r < static_cast<int>(rows.size()); ++r)
    (rows[r].index.size() > kLongRow ? long_rows_ : short_rows_).push_back(r);
  std::vector<int> uses(n_, 0);
  for (int r : short_rows_)
    for (int k : rows[r].index) ++uses[k];
  shared_pos_.assign(n_, -1);
  for (int k = 0; k < n_; ++k) {
    // A free column has no diagonal of its own; solving it with the others keeps every group's
    // block positive definite.
    if (uses[k] > kSharedColumn || free_columns[k]) {
      shared_pos_[k] = static_cast<int>(shared_.size());
      shared_.push_back(k);
    }
  }
  if (shared_.size() > kLargestGroup) return false;
  std::vector<int> parent(n_);
  std::iota(parent.begin(), parent.end(), 0);
  for (int r : short_rows_) {
    int first = -1;
    for (int k : rows[r].index) {
      if (shared_pos_[k] >= 0) continue;
      if (first < 0)
        first = k;
      else
        parent[Find(parent, k)] = Find(parent, first);
    }
  }
  group_of_.assign(n_, -1);
  pos_in_group_.assign(n_, -1);
  std::vector<int> id(n_, -1);
  for (int k = 0; k < n_; ++k) {
    if (shared_pos_[k] >= 0) continue;
    int root = Find(parent, k);
    if (id[root] < 0) {
      id[root] = static_cast<int>(groups_.size());
      groups_.emplace_back();
    }
    group_of_[k] = id[root];
    pos_in_group_[k] = static_cast<int>(groups_[id[root]].size());
    groups_[id[root]].push_back(k);
    if (groups_[id[root]].size() > kLargestGroup) return false;
  }
  dense_ = false;
  return true;
}

bool BarrierSystem::SolveDense(const std::vector<double>& h, const std::vector<double>& d,
                               std::vector<double>& g) const {
  std::vector<double> a(static_cast<size_t>(n_) * n_, 0.0);
  for (int k = 0; k < n_; ++k) a[k * n_ + k] = d[k];
  for (size_t r = 0; r < rows_.size(); ++r) {
    const BarrierRow& row = rows_[r];
    for (size_t p = 0; p < row.index.size(); ++p)
      for (size_t q = 0; q < row.index.size(); ++q)
        a[row.index[p] * n_ + row.index[q]] += h[r] * row.value[p] * row.value[q];
  }
  if (!Factor(a, n_)) return false;
  Substitute(a, n_, g.data());
  for (double v : g)
    if (!std::isfinite(v)) return false;
  return true;
}

void BarrierSystem::Multiply(const std::vector<double>& h, const std::vector<double>& d,
                             const std::vector<double>& x, std::vector<double>& out) const {
  out.assign(n_, 0.0);
  for (int k = 0; k < n_; ++k) out[k] = d[k] * x[k];
  for (size_t r = 0; r < rows_.size(); ++r) {
    const BarrierRow& row = rows_[r];
    double dot = 0;
    for (size_t p = 0; p < row.index.size(); ++p) dot += row.value[p] * x[row.index[p]];
    dot *= h[r];
    for (size_t p = 0; p < row.index.size(); ++p) out[row.index[p]] += dot * row.value[p];
  }
}

bool BarrierSystem::Solve(const std::vector<double>& h, const std::vector<double>& d,
                          std::vector<double>& g) const {
  if (dense_) return SolveDense(h, d, g);
  // The block elimination loses digits when the barrier's weights spread over many orders of
  // magnitude (near the optimum); a few steps of iterative refinement win some of them back.
  const std::vector<double> rhs = g;
  std::function<bool(std::vector<double>&)> solve;
  if (!SolveBlocks(h, d, &solve) || !solve(g)) return false;
  if (short_rows_.empty() && shared_.empty()) return true;  // refined in `solve`
  std::vector<double> product, residual(n_);
  double size = 0;
  for (double v : rhs) size = std::max(size, std::fabs(v));
  for (int step = 0; step < 3; ++step) {
    Multiply(h, d, g, product);
    double worst = 0;
    for (int k = 0; k < n_; ++k) {
      residual[k] = rhs[k] - product[k];
      worst = std::max(worst, std::fabs(residual[k]));
    }
    if (worst <= 1e-13 * size || !solve(residual)) break;
    for (int k = 0; k < n_; ++k) g[k] += residual[k];
  }
  return true;
}

bool BarrierSystem::SolveBlocks(const std::vector<double>& h, const std::vector<double>& d,
                                std::function<bool(std::vector<double>&)>* solve) const {
  const int shared = static_cast<int>(shared_.size());
  // M: the short rows and the diagonal, arranged as groups (block diagonal) bordered by the shared
  // columns: [[B, E], [E^T, F]].
  std::vector<std::vector<double>> blocks(groups_.size());
  std::vector<std::vector<double>> border(groups_.size());  // E per group: size x shared
  for (size_t b = 0; b < groups_.size(); ++b) {
    const int size = static_cast<int>(groups_[b].size());
    blocks[b].assign(static_cast<size_t>(size) * size, 0.0);
    border[b].assign(static_cast<size_t>(size) * shared, 0.0);
    for (int i = 0; i < size; ++i) blocks[b][i * size + i] = d[groups_[b][i]];
  }
  std::vector<double> f(static_cast<size_t>(shared) * shared, 0.0);
  for (int s = 0; s < shared; ++s) f[s * shared + s] = d[shared_[s]];
  for (int r : short_rows_) {
    const BarrierRow& row = rows_[r];
    for (size_t p = 0; p < row.index.size(); ++p) {
      const int i = row.index[p];
      for (size_t q = 0; q < row.index.size(); ++q) {
        const int j = row.index[q];
        const double v = h[r] * row.value[p] * row.value[q];
        if (shared_pos_[i] >= 0) {
          if (shared_pos_[j] >= 0) f[shared_pos_[i] * shared + shared_pos_[j]] += v;
        } else if (shared_pos_[j] >= 0) {
          border[group_of_[i]][pos_in_group_[i] * shared + shared_pos_[j]] += v;
        } else {
          const int size = static_cast<int>(groups_[group_of_[i]].size());
          blocks[group_of_[i]][pos_in_group_[i] * size + pos_in_group_[j]] += v;
        }
      }
    }
  }
  // Factor the groups; B^-1 E per group; the Schur complement S = F - E^T B^-1 E.
  std::vector<std::vector<double>> solved_border(groups_.size());
  for (size_t b = 0; b < groups_.size(); ++b) {
    const int size = static_cast<int>(groups_[b].size());
    if (!Factor(blocks[b], size)) return false;
    solved_border[b] = border[b];
    for (int s = 0; s < shared; ++s) Substitute(blocks[b], size, solved_border[b].data() + s, shared);
    for (int s = 0; s < shared; ++s)
      for (int t = 0; t < shared; ++t) {
        double v = 0;
        for (int i = 0; i < size; ++i) v += border[b][i * shared + s] * solved_border[b][i * shared + t];
        f[s * shared + t] -= v;
      }
  }
  if (shared > 0 && !Factor(f, shared)) return false;
  // M^-1 x for a full vector x, in place (kept by the returned solver: captures by value).
  auto solve_m = [this, shared, blocks = std::move(blocks), border = std::move(border),
                  solved_border = std::move(solved_border), f = std::move(f)](std::vector<double>& x) {
    std::vector<double> rhs_shared(shared);
    for (int s = 0; s < shared; ++s) rhs_shared[s] = x[shared_[s]];
    std::vector<double> y;
    for (size_t b = 0; b < groups_.size(); ++b) {
      const int size = static_cast<int>(groups_[b].size());
      y.resize(size);
      for (int i = 0; i < size; ++i) y[i] = x[groups_[b][i]];
      Substitute(blocks[b], size, y.data());
      for (int i = 0; i < size; ++i) x[groups_[b][i]] = y[i];
      for (int s = 0; s < shared; ++s)
        for (int i = 0; i < size; ++i) rhs_shared[s] -= border[b][i * shared + s] * y[i];
    }
    if (shared > 0) Substitute(f, shared, rhs_shared.data());
    for (int s = 0; s < shared; ++s) x[shared_[s]] = rhs_shared[s];
    for (size_t b = 0; b < groups_.size(); ++b) {
      const int size = static_cast<int>(groups_[b].size());
      for (int i = 0; i < size; ++i) {
        double v = 0;
        for (int s = 0; s < shared; ++s) v += solved_border[b][i * shared + s] * rhs_shared[s];
        x[groups_[b][i]] -= v;
      }
    }
  };
  // The long rows by Woodbury: (M + V W V^T)^-1 g = M^-1 g - Z (W^-1 + V^T Z)^-1 V^T M^-1 g,
  // Z = M^-1 V.
  const int m = static_cast<int>(long_rows_.size());
  std::vector<std::vector<double>> z(m, std::vector<double>(n_, 0.0));
  std::vector<double> k(static_cast<size_t>(m) * m, 0.0);
  for (int a = 0; a < m; ++a) {
    const BarrierRow& row = rows_[long_rows_[a]];
    for (size_t p = 0; p < row.index.size(); ++p) z[a][row.index[p]] = row.value[p];
    solve_m(z[a]);
  }
  for (int a = 0; a < m; ++a) {
    const BarrierRow& row = rows_[long_rows_[a]];
    k[a * m + a] += 1.0 / h[long_rows_[a]];
    for (int c = 0; c < m; ++c) {
      double v = 0;
      for (size_t p = 0; p < row.index.size(); ++p) v += row.value[p] * z[c][row.index[p]];
      k[a * m + c] += v;
    }
  }
  // V^T Z is symmetric up to rounding; Factor reads its lower triangle.
  if (m > 0 && !Factor(k, m)) return false;
  const bool refine_multipliers = short_rows_.empty() && shared_.empty();
  *solve = [this, &h, solve_m, z = std::move(z), k = std::move(k), m,
            refine_multipliers](std::vector<double>& g) {
    solve_m(g);
    if (m > 0) {
      std::vector<double> rhs(m, 0.0);
      for (int a = 0; a < m; ++a) {
        const BarrierRow& row = rows_[long_rows_[a]];
        for (size_t p = 0; p < row.index.size(); ++p) rhs[a] += row.value[p] * g[row.index[p]];
      }
      Substitute(k, m, rhs.data());
      for (int a = 0; a < m; ++a)
        for (int j = 0; j < n_; ++j) g[j] -= z[a][j] * rhs[a];
      // Over a diagonal M (every row long) the step is exact given the rows' multipliers y = rhs,
      // so refine y alone, on the rows' equations V x - W^-1 y = 0: unlike the full system's
      // residual, theirs multiplies nothing by the huge weights of the nearly tight rows.
      for (int step = 0; step < 3 && refine_multipliers; ++step) {
        std::vector<double> residual(m, 0.0);
        double worst = 0, size = 0;
        for (int a = 0; a < m; ++a) {
          const BarrierRow& row = rows_[long_rows_[a]];
          double v = 0;
          for (size_t p = 0; p < row.index.size(); ++p) v += row.value[p] * g[row.index[p]];
          residual[a] = v - rhs[a] / h[long_rows_[a]];
          worst = std::max(worst, std::fabs(residual[a]));
          size = std::max(size, std::fabs(v));
        }
        if (!(worst > 1e-15 * size)) break;
        Substitute(k, m, residual.data());
        for (int a = 0; a < m; ++a) {
          rhs[a] += residual[a];
          for (int j = 0; j < n_; ++j) g[j] -= z[a][j] * residual[a];
        }
      }
    }
    for (double v : g)
      if (!std::isfinite(v)) return false;
    return true;
  };
  return true;
}

}  // namespace gpufleet::jobtime
