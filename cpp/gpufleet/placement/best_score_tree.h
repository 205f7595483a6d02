// A tournament tree over per-node scores: the root names the node with the highest score, ties to
// the lowest index (the full scan's rule), and a changed score is replayed up one path
// (log2 of the nodes) instead of rescanning every node. The scores live with the caller; the tree
// holds node indices only.
#ifndef GPUFLEET_PLACEMENT_BEST_SCORE_TREE_H_
#define GPUFLEET_PLACEMENT_BEST_SCORE_TREE_H_

#include <vector>

namespace gpufleet {

class BestScoreTree {
 public:
  // Over `score[0..n)`; no score may be NaN (the caller stores none).
  void Build(const double* score, int n) {
    n_ = n;
    leaves_ = 1;
    while (leaves_ < n) leaves_ *= 2;
    winner_.assign(2 * leaves_, -1);
    for (int i = 0; i < n; ++i) winner_[leaves_ + i] = i;
    for (int k = leaves_ - 1; k >= 1; --k) winner_[k] = Match(score, winner_[2 * k], winner_[2 * k + 1]);
  }
  // score[i] changed.
  void Update(const double* score, int i) {
    for (int k = (leaves_ + i) / 2; k >= 1; k /= 2) {
      const int w = Match(score, winner_[2 * k], winner_[2 * k + 1]);
      if (winner_[k] == w && w != i) break;  // the path above already knows this winner
      winner_[k] = w;
    }
  }
  // The first node with the highest score, or -1 over no nodes.
  int Best() const { return n_ == 0 ? -1 : winner_[1]; }
  int size() const { return n_; }

 private:
  // `a` covers lower indices than `b`, so it wins ties.
  static int Match(const double* score, int a, int b) {
    if (b < 0) return a;
    if (a < 0) return b;
    return score[b] > score[a] ? b : a;
  }

  int n_ = 0, leaves_ = 1;
  std::vector<int> winner_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_BEST_SCORE_TREE_H_
