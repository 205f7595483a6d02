// The Newton systems of a log barrier over an LP's rows (lp_centre.cc):
//   (sum_r h_r a_r a_r^T + diag(d)) x = g,
// solved without forming the dense n x n matrix when the rows allow it. The allocation LPs of
// Gavel's policies have one small group of variables per job (its shares on each model) joined only
// by a few long rows (a model's capacity) and a few variables in every job's row (an epigraph
// variable): the groups are factored one by one, the shared variables by a Schur complement and the
// long rows by the Sherman-Morrison-Woodbury identity, so a step costs O(jobs) instead of O(jobs^3).
// When short rows join too many columns and no column is free (packed pairs join a few jobs' rows),
// every row goes by Woodbury. Other shapes fall back to a dense Cholesky factorisation.
#ifndef GPUFLEET_POLICIES_BARRIER_SYSTEM_H_
#define GPUFLEET_POLICIES_BARRIER_SYSTEM_H_

#include <functional>
#include <vector>

namespace gpufleet::jobtime {

struct BarrierRow {
  std::vector<int> index;  // columns with a non-zero entry
  std::vector<double> value;
};

class BarrierSystem {
 public:
  // Reads the rows' structure once; `rows` must outlive this object and keep its shape.
  // `free_columns` have no diagonal term of their own (d = 0 there).
  BarrierSystem(const std::vector<BarrierRow>& rows, int columns, const std::vector<char>& free_columns);
  // Solves the system for row weights h (one per row, > 0) and diagonal d (>= 0), g in place.
  // False when it is singular to working precision.
  bool Solve(const std::vector<double>& h, const std::vector<double>& d, std::vector<double>& g) const;

 private:
  // Lays the columns out as groups joined by short rows, shared columns and long rows; false
  // (dense_ stays true) when a group or the shared columns grow too large.
  bool Group(const std::vector<char>& free_columns);
  bool SolveDense(const std::vector<double>& h, const std::vector<double>& d, std::vector<double>& g) const;
  // Factors the blocks for weights h and d; `solve` then solves the system for any right-hand
  // side in place.
  bool SolveBlocks(const std::vector<double>& h, const std::vector<double>& d,
                   std::function<bool(std::vector<double>&)>* solve) const;
  // out = (sum_r h_r a_r a_r^T + diag(d)) x.
  void Multiply(const std::vector<double>& h, const std::vector<double>& d, const std::vector<double>& x,
                std::vector<double>& out) const;

  const std::vector<BarrierRow>& rows_;
  int n_;
  bool dense_ = true;
  std::vector<int> long_rows_;              // solved by Woodbury
  std::vector<int> short_rows_;
  std::vector<int> shared_;                 // columns solved by a Schur complement
  std::vector<int> shared_pos_;             // per column: its place in shared_, or -1
  std::vector<std::vector<int>> groups_;    // the other columns, by connected group
  std::vector<int> group_of_, pos_in_group_;
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_BARRIER_SYSTEM_H_
