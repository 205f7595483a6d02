// LAS as it was before its incremental rewrite: policies/ordered.h's OrderedPolicy (still the
// engine's and the Tiresias-compatible path: on a contended point every active job is re-sorted by
// its key and the cluster filled greedily with a full plan) keyed by attained service. Kept only
// as the reference the incremental LAS is compared with (sim_reference_test.cc); not registered.
#ifndef GPUFLEET_TESTS_CPP_REFERENCE_LAS_REFERENCE_H_
#define GPUFLEET_TESTS_CPP_REFERENCE_LAS_REFERENCE_H_

#include "gpufleet/policies/job_time_policy.h"
#include "gpufleet/policies/ordered.h"

namespace gpufleet::jobtime::reference {

using OrderedReference = OrderedPolicy;

class LasReference : public OrderedReference {
 public:
  explicit LasReference(bool gputime) : gputime_(gputime) {}

 protected:
  double Key(const JobTimeView& view, int i) const override {
    return gputime_ ? view.GpuTime(i) : view.RunTime(i);
  }

 private:
  bool gputime_;
};

}  // namespace gpufleet::jobtime::reference

#endif  // GPUFLEET_TESTS_CPP_REFERENCE_LAS_REFERENCE_H_
