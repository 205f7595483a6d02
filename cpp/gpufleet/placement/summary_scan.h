// The first step of a full scan: every node checked against its compact summaries
// (accounting/node_summaries.h) and, for strategies that score by allocation (binpack, spread,
// topology), scored, in one branch-free loop over dense arrays. The summaries are a necessary
// condition only: the devices decide (the Placer consults them for the best candidates, in score
// order). Scores are the same doubles the strategy's ScoreNode gives (tests/cpp/placer_test.cc).
#ifndef GPUFLEET_PLACEMENT_SUMMARY_SCAN_H_
#define GPUFLEET_PLACEMENT_SUMMARY_SCAN_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/accounting/node_summaries.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

// A node the pod cannot use.
inline constexpr double kNoNode = -std::numeric_limits<double>::infinity();

// A pod's needs and score terms as doubles, for the scan over NodeSummaries. `exact` is false
// when some value is too large for the doubles to be exact; the scan is then not used.
struct SummaryRequest {
  bool exact = true;
  bool gpu = false, whole = false, by_percent = false;
  double cpu = 0, memory = 0, count = 0, core = 0, bytes = 0;
  double core_extra = 0, memory_extra = 0;  // GPU core and (by bytes) memory the pod adds
  int64_t percent = 0, count_int = 0;

  explicit SummaryRequest(const Pod& pod);
  // What the pod adds to a node's GPU memory when asked in percent of the node's average card.
  int64_t PercentBytes(int64_t average) const { return percent * average / 100 * count_int; }
};

class SummaryScan {
 public:
  // True when the summary scores are exactly the strategy's scores for this pod (a strategy that
  // scores by allocation alone, figures small enough to be exact), so that the best summary
  // score that fits on its devices is the answer.
  static bool ScoresAreExact(const ClusterState& state, const PlacementStrategy& strategy,
                             const SummaryRequest& q);

  // Every node's summary score into `score` (kNoNode where the summaries or the node's labels and
  // taints rule it out); `most`: MostAllocated, else LeastAllocated. False, with `score`
  // untouched, when the summaries cannot answer exactly for this pod.
  bool ScoreAll(const ClusterState& state, const NodeAdmission& admission,
                const SummaryRequest& q, bool most, double* score);

  // Node i's entry of ScoreAll. False when node i's figures are too large to be exact.
  static bool ScoreOne(const ClusterState& state, const NodeAdmission& admission,
                       const SummaryRequest& q, bool most, int i, double* score);

 private:
  std::vector<double> memory_extra_;  // scratch, per node
  std::vector<uint8_t> allowed_;
};

// The first node with the highest score, or -1 when none scores above -1 (a strategy's scores
// are in [0, 100]; kNoNode and NaN never win).
int FirstBest(const double* score, int n);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_SUMMARY_SCAN_H_
