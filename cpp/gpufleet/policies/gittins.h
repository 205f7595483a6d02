// The Gittins-index table of Tiresias' simulator (run_sim.py: parse_job_dist,
// cal_r_gittins_index, get_gittins_index), reproduced for the gittins policy's tiresias_compat
// mode. It differs from the textbook index that the policy uses otherwise (gittins.cc):
//  - one fixed quantum (`gittins_delta` = 3,250 GPU-seconds) for every queue, not limit - a;
//  - the index is tabulated once per distinct sample v at a = v - 1 and looked up by the first
//    sample above the attained service, so it is constant between two samples and taken at the
//    right end of that step;
//  - the expected cost sums the samples S themselves, not S - a, over the jobs that end within
//    the quantum, and when a + quantum passes the largest sample the largest is counted as not
//    ending;
//  - Python 2 arithmetic: the mean is an integer division (floored), and probability and index
//    are rounded with round(x, 5) and round(x, 4), which ties away from zero.
#ifndef GPUFLEET_POLICIES_GITTINS_H_
#define GPUFLEET_POLICIES_GITTINS_H_

#include <cstdint>
#include <vector>

namespace gpufleet::jobtime {

// Python 2's round(x, digits): the exact binary value of x rounded to `digits` decimals, halves
// away from zero, read back as the nearest double.
double Python2Round(double x, int digits);

class TiresiasGittinsTable {
 public:
  static constexpr int64_t kDelta = 3250;  // Tiresias' JOBS.gittins_delta

  // `samples` are job service times in whole GPU-seconds (Tiresias reads them with int()), in
  // any order; at least one.
  explicit TiresiasGittinsTable(std::vector<int64_t> samples, int64_t delta = kDelta);

  // The rank of a job with `attained` whole GPU-seconds: larger runs first; 0 past the largest
  // sample (get_gittins_index).
  double Rank(int64_t attained) const;
  // The index at attained service `a` (cal_r_gittins_index).
  double IndexAt(int64_t a) const;

 private:
  std::vector<int64_t> data_, prefix_;
  int64_t delta_;
  std::vector<double> rank_;  // per sample, at sample - 1
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_GITTINS_H_
