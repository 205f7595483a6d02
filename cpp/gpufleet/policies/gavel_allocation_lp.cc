#include "gpufleet/policies/gavel_allocation_lp.h"

#include <utility>

namespace gpufleet::jobtime {

AllocationLp::AllocationLp(const AllocationInput& in, int extra, const std::vector<int>& copies)
    : jobs_(static_cast<int>(in.jobs.size())),
      columns_(static_cast<int>(in.capacity.size())),
      vars_(jobs_ * columns_ + extra) {
  auto count = [&](int j) { return copies.empty() ? 1.0 : static_cast<double>(copies[j]); };
  used_.assign(static_cast<size_t>(jobs_) * columns_, 0);
  weights_.columns.assign(vars_, 1.0);
  for (int j = 0; j < jobs_; ++j)
    for (int c = 0; c < columns_; ++c) {
      used_[var(j, c)] = in.gavel || in.jobs[j].rate[c] > 0;
      weights_.columns[var(j, c)] = used_[var(j, c)] ? count(j) : 0;
    }
  for (int j = 0; j < jobs_; ++j) {
    std::vector<double> row(vars_, 0.0);
    for (int c = 0; c < columns_; ++c)
      if (used(j, c)) row[var(j, c)] = 1.0;
    AddRow(std::move(row), 1.0, count(j));
  }
  for (int c = 0; c < columns_; ++c) {
    std::vector<double> row(vars_, 0.0);
    for (int j = 0; j < jobs_; ++j)
      if (used(j, c)) row[var(j, c)] = in.jobs[j].gpus * count(j);
    AddRow(std::move(row), in.capacity[c]);
  }
}

void AllocationLp::AddRow(std::vector<double> a, double b, double weight) {
  a_.push_back(std::move(a));
  b_.push_back(b);
  weights_.rows.push_back(weight);
}

Allocation AllocationLp::Unpack(const std::vector<double>& x) const {
  Allocation out(jobs_, std::vector<double>(columns_, 0.0));
  for (int j = 0; j < jobs_; ++j)
    for (int c = 0; c < columns_; ++c)
      if (used(j, c)) out[j][c] = x[var(j, c)];
  return out;
}

}  // namespace gpufleet::jobtime
