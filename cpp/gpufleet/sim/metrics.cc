#include "gpufleet/sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace gpufleet::sim {

using jobtime::Job;

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  double pos = q / 100.0 * (values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + lo, values.end());
  double a = values[lo];
  double b = a;
  if (hi != lo) b = *std::min_element(values.begin() + lo + 1, values.end());
  return a + (b - a) * (pos - lo);
}

namespace {
// Percentile over values sorted ascending: the same numbers Percentile picks, without a copy.
double PercentileOfSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q / 100.0 * (sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double a = sorted[lo];
  double b = hi != lo ? sorted[hi] : a;
  return a + (b - a) * (pos - lo);
}
}  // namespace

Summary Summarize(const std::vector<Job>& jobs, int total_gpus, double busy_gpu_seconds) {
  Summary s;
  s.num_jobs = static_cast<int64_t>(jobs.size());
  if (jobs.empty()) return s;
  std::vector<double> jct;
  jct.reserve(jobs.size());
  double first_submit = jobs[0].spec.submit_time, last_end = 0, queueing = 0;
  for (const Job& j : jobs) {
    if (j.dropped) {
      ++s.dropped_jobs;
      continue;
    }
    jct.push_back(j.end_time - j.spec.submit_time);
    first_submit = std::min(first_submit, j.spec.submit_time);
    last_end = std::max(last_end, j.end_time);
    queueing += j.queueing_delay;
    s.preemptions += j.preemptions;
    s.migrations += j.migrations;
    s.jobs_spanning_nodes += j.max_nodes > 1;
  }
  if (jct.empty()) return s;
  double total = 0;
  for (double v : jct) total += v;
  s.avg_jct = total / jct.size();
  std::sort(jct.begin(), jct.end());  // one sort instead of a copy per percentile
  s.p50_jct = PercentileOfSorted(jct, 50);
  s.p95_jct = PercentileOfSorted(jct, 95);
  s.p99_jct = PercentileOfSorted(jct, 99);
  s.avg_queueing_delay = queueing / jct.size();
  s.makespan = last_end - first_submit;
  if (s.makespan > 0 && total_gpus > 0)
    s.gpu_utilization = busy_gpu_seconds / (static_cast<double>(total_gpus) * s.makespan);
  return s;
}

}  // namespace gpufleet::sim
