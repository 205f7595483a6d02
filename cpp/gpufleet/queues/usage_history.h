// Each queue's past usage for time-aware fairness (KAI's time-based fair share): what the queue
// held, integrated over time, each moment weighted by 0.5^(age / half_life), within a sliding
// window, and divided by the cluster's capacity integrated the same way. A queue that held a
// tenth of the cluster all along has usage 0.1, however long the window. Queues are kept by name,
// so the history survives queues being added, removed or renumbered.
#ifndef GPUFLEET_QUEUES_USAGE_HISTORY_H_
#define GPUFLEET_QUEUES_USAGE_HISTORY_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace gpufleet::queues {

struct UsageParams {
  double half_life = 0;  // seconds; 0: no decay
  double window = 0;     // seconds; 0: all of the past
  absl::Status Check() const;
};

class UsageHistory {
 public:
  // Counts `allocated` (per queue x resource, queues named by `names`) and `capacity` (per
  // resource) as held from the last call until `now`. The first call only starts the clock.
  void Advance(double now, const std::vector<std::string>& names, int num_resources,
               absl::Span<const double> allocated, absl::Span<const double> capacity,
               const UsageParams& params);
  // Per queue x resource: decayed usage over decayed capacity (0 without history).
  void Normalized(const std::vector<std::string>& names, int num_resources, double now,
                  const UsageParams& params, std::vector<double>* out) const;
  double last() const { return last_; }
  bool operator==(const UsageHistory&) const = default;

 private:
  static constexpr int kBuckets = 16;
  struct Series {
    // With a window: integrals per time bucket (ring by bucket number); without: one decayed sum.
    std::vector<double> buckets;  // kBuckets x resources
    std::vector<int64_t> bucket_ids;
    std::vector<double> decayed;  // resources
    bool operator==(const Series&) const = default;
  };
  void Add(Series& s, int num_resources, double from, double to,
           absl::Span<const double> amounts, const UsageParams& params);
  double Weighted(const Series& s, int r, double now, const UsageParams& params) const;

  bool started_ = false;
  double last_ = 0;
  Series capacity_;
  absl::flat_hash_map<std::string, Series> queues_;
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_USAGE_HISTORY_H_
