// The first step of a full scan: every node checked against its compact summaries
// (accounting/node_summaries.h) and, for strategies that score by allocation (binpack, spread,
// topology), scored, in one branch-free loop over dense narrow arrays that also keeps the first
// best node. The summaries are a necessary condition only: the devices decide (the Placer
// consults them for the best candidates, in score order). Scores are the same doubles the
// strategy's ScoreNode gives (tests/cpp/placer_test.cc).
//
// The loop exists three times, picked at run time: AVX-512 (8 nodes per step, with the narrow
// columns widened in registers), the portable loop compiled for AVX2, and the portable loop for
// any CPU. All three use only correctly rounded IEEE operations in the same order, so they give
// identical doubles and the same node (tests/cpp/summary_scan_test.cc runs each and compares).
#ifndef GPUFLEET_PLACEMENT_SUMMARY_SCAN_H_
#define GPUFLEET_PLACEMENT_SUMMARY_SCAN_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/types/span.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/accounting/node_summaries.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/strategy.h"

namespace gpufleet {

// A node the pod cannot use.
inline constexpr double kNoNode = -std::numeric_limits<double>::infinity();

// A pod's needs as the scan compares them (rounded toward admitting, like the feasibility
// columns) and its score terms as exact doubles. `exact` is false when some value is too large
// for the scores to be exact; the scan is then not used.
struct SummaryRequest {
  bool exact = true;
  bool gpu = false, whole = false, by_percent = false;
  // Feasibility.
  int32_t cpu = 0, count = 0, core = 0;
  float memory = 0, bytes = 0;  // bytes: of one GPU when asked in bytes, else -1
  // Score terms: what the pod adds to a node's cpu and memory (pods without GPUs), or its GPU
  // core and, asked in bytes, GPU memory; asked in percent of the node's average card, the
  // memory is floor(percent * average / 100) * count on each node.
  double cpu_extra = 0, memory_extra = 0, core_extra = 0, gpu_memory_extra = 0;
  double percent = 0, count_extra = 0;

  explicit SummaryRequest(const Pod& pod);
};

// The three builds of the scan loop.
enum class ScanPath { kPortable, kAvx2, kAvx512 };
bool ScanPathAvailable(ScanPath path);
ScanPath FastestScanPath();  // of those this CPU runs

class SummaryScan {
 public:
  // True when the summary scores are exactly the strategy's scores for this pod (a strategy that
  // scores by allocation alone, figures small enough to be exact), so that the best summary
  // score that fits on its devices is the answer.
  static bool ScoresAreExact(const ClusterState& state, const PlacementStrategy& strategy,
                             const SummaryRequest& q);

  struct Result {
    bool scanned = false;  // false: the summaries cannot answer exactly for this pod
    int best = -1;         // the first node with the highest score above -1, or -1
  };
  // Every node's summary score (kNoNode where the summaries or the node's labels and taints rule
  // it out), into `score` when not null; `most`: MostAllocated, else LeastAllocated.
  Result ScoreAll(const ClusterState& state, const NodeAdmission& admission,
                  const SummaryRequest& q, bool most, double* score,
                  ScanPath path = FastestScanPath());

  // Node i's entry of ScoreAll. False when node i's figures are too large to be exact.
  static bool ScoreOne(const ClusterState& state, const NodeAdmission& admission,
                       const SummaryRequest& q, bool most, int i, double* score);

  // The arrays a scan for `q` reads (the floor benchmark streams the same bytes).
  static std::vector<absl::Span<const uint8_t>> ColumnsRead(const NodeSummaries& m,
                                                            const SummaryRequest& q);

 private:
  std::vector<uint8_t> allowed_;  // scratch, per node: 1 where labels and taints admit the pod
  std::vector<double> scratch_;   // the portable loop's scores when the caller keeps none
};

// The first node with the highest score, or -1 when none scores above -1 (a strategy's scores
// are in [0, 100]; kNoNode and NaN never win).
int FirstBest(const double* score, int n);

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_SUMMARY_SCAN_H_
