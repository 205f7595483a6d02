#include "gpufleet/policies/gavel_allocation_lp.h"

#include <utility>

namespace gpufleet::jobtime {

AllocationLp::AllocationLp(const AllocationInput& in, int extra, const std::vector<int>& copies)
    : jobs_(static_cast<int>(in.jobs.size())),
      rows_(jobs_ + static_cast<int>(in.pairs.size())),
      columns_(static_cast<int>(in.capacity.size())),
      vars_(rows_ * columns_ + extra) {
  auto count = [&](int j) { return copies.empty() ? 1.0 : static_cast<double>(copies[j]); };
  used_.assign(static_cast<size_t>(rows_) * columns_, 0);
  weights_.columns.assign(vars_, 1.0);
  for (int j = 0; j < jobs_; ++j)
    for (int c = 0; c < columns_; ++c) {
      used_[var(j, c)] = in.gavel || in.jobs[j].rate[c] > 0;
      weights_.columns[var(j, c)] = used_[var(j, c)] ? count(j) : 0;
    }
  pairs_of_.assign(jobs_, {});
  for (int p = 0; p < static_cast<int>(in.pairs.size()); ++p) {
    const AllocationPair& pair = in.pairs[p];
    pairs_of_[pair.a].push_back(p);
    pairs_of_[pair.b].push_back(p);
    for (int c = 0; c < columns_; ++c) {
      const int v = var(jobs_ + p, c);
      used_[v] = in.gavel || (pair.rate_a[c] > 0 && pair.rate_b[c] > 0);
      weights_.columns[v] = used_[v] ? 1.0 : 0.0;
    }
  }
  for (int j = 0; j < jobs_; ++j) {
    std::vector<double> row(vars_, 0.0);
    for (int c = 0; c < columns_; ++c) {
      if (used(j, c)) row[var(j, c)] = 1.0;
      for (int p : pairs_of_[j])
        if (used(jobs_ + p, c)) row[var(jobs_ + p, c)] = 1.0;
    }
    AddRow(std::move(row), 1.0, count(j));
  }
  for (int c = 0; c < columns_; ++c) {
    std::vector<double> row(vars_, 0.0);
    for (int j = 0; j < jobs_; ++j)
      if (used(j, c)) row[var(j, c)] = in.jobs[j].gpus * count(j);
    for (int p = 0; p < static_cast<int>(in.pairs.size()); ++p)
      if (used(jobs_ + p, c)) row[var(jobs_ + p, c)] = in.jobs[in.pairs[p].a].gpus;  // once
    AddRow(std::move(row), in.capacity[c]);
  }
}

void AllocationLp::AddThroughput(const AllocationInput& in, int job, double scale,
                                 std::vector<double>* a, double divisor) const {
  for (int c = 0; c < columns_; ++c) {
    if (used(job, c)) (*a)[var(job, c)] += scale * in.jobs[job].rate[c] / divisor;
    for (int p : pairs_of_[job]) {
      const AllocationPair& pair = in.pairs[p];
      if (used(jobs_ + p, c))
        (*a)[var(jobs_ + p, c)] +=
            scale * (pair.a == job ? pair.rate_a[c] : pair.rate_b[c]) / divisor;
    }
  }
}

double AllocationLp::Throughput(const AllocationInput& in, const Allocation& x, int job) {
  double rate = 0;
  const size_t jobs = in.jobs.size();
  for (size_t c = 0; c < in.capacity.size(); ++c) rate += in.jobs[job].rate[c] * x[job][c];
  for (size_t p = 0; p < in.pairs.size(); ++p) {
    const AllocationPair& pair = in.pairs[p];
    if (pair.a != job && pair.b != job) continue;
    for (size_t c = 0; c < in.capacity.size(); ++c)
      rate += (pair.a == job ? pair.rate_a[c] : pair.rate_b[c]) * x[jobs + p][c];
  }
  return rate;
}

void AllocationLp::AddRow(std::vector<double> a, double b, double weight) {
  a_.push_back(std::move(a));
  b_.push_back(b);
  weights_.rows.push_back(weight);
}

Allocation AllocationLp::Unpack(const std::vector<double>& x) const {
  Allocation out(rows_, std::vector<double>(columns_, 0.0));
  for (int j = 0; j < rows_; ++j)
    for (int c = 0; c < columns_; ++c)
      if (used(j, c)) out[j][c] = x[var(j, c)];
  return out;
}

}  // namespace gpufleet::jobtime
