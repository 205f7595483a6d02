// The LP shape Gavel's allocation policies share (policy.py, Policy.get_base_constraints): one
// variable x[j][c] per job and column (a model, or the pooled column), x >= 0, each job's shares
// summing to at most 1 and each column's GPUs not over-committed (a job counts its GPU count), plus
// trailing variables of the policy's own. With packed pairs (AllocationInput::pairs; Gavel's
// PolicyWithPacking) each pair has a variable per column too, in both of its jobs' share rows, its
// GPUs counted once. Policies add their rows and solve it with MaximizeLp or MaximizeLpCentred.
#ifndef GPUFLEET_POLICIES_GAVEL_ALLOCATION_LP_H_
#define GPUFLEET_POLICIES_GAVEL_ALLOCATION_LP_H_

#include <vector>

#include "gpufleet/policies/gavel_round_policy.h"
#include "gpufleet/policies/lp_centre.h"

namespace gpufleet::jobtime {

class AllocationLp {
 public:
  // In Gavel's own form (in.gavel) every x[j][c] is in the rows, also where the job cannot run
  // (Gavel's LPs do so); otherwise those stay out of every row and at 0. `copies` (empty: 1 each)
  // says how many identical jobs each input row stands for: its GPUs count that many times in a
  // column's capacity and its rows and variables weigh that much in the centre's barrier.
  AllocationLp(const AllocationInput& in, int extra, const std::vector<int>& copies = {});

  int vars() const { return vars_; }
  // x of an input job's row, or of pair p at row jobs + p.
  int var(int row, int column) const { return row * columns_ + column; }
  int extra(int k) const { return rows_ * columns_ + k; }
  // Whether x[row][c] takes part (see the constructor).
  bool used(int row, int column) const { return used_[row * columns_ + column]; }
  // Adds scale x job j's work per second under x (alone and in its pairs) / divisor to row `a`.
  void AddThroughput(const AllocationInput& in, int job, double scale, std::vector<double>* a,
                     double divisor = 1.0) const;
  // Job j's work per second under an allocation (jobs' rows, then pairs').
  static double Throughput(const AllocationInput& in, const Allocation& x, int job);
  // A row a.x <= b (a has vars() entries) with its barrier weight.
  void AddRow(std::vector<double> a, double b, double weight = 1.0);
  // Leaves a trailing variable free of x >= 0 in the centre's barrier (an epigraph variable).
  void Free(int var) { weights_.columns[var] = 0; }

  const std::vector<std::vector<double>>& a() const { return a_; }
  const std::vector<double>& b() const { return b_; }
  const CentreWeights& weights() const { return weights_; }
  // The x part of a solution, by job (then pair) and column.
  Allocation Unpack(const std::vector<double>& x) const;

 private:
  int jobs_, rows_, columns_, vars_;
  std::vector<std::vector<int>> pairs_of_;  // per job: its pairs' indices
  std::vector<char> used_;
  std::vector<std::vector<double>> a_;
  std::vector<double> b_;
  CentreWeights weights_;
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_GAVEL_ALLOCATION_LP_H_
