// A validated queue tree: queues with parents to any depth, their quotas as flat per-resource
// arrays (node-major: value(node, resource) = array[node * num_resources + resource]) and the
// links between them. Building checks the whole tree and reports the first problem in one line
// naming the queue: an unknown parent, a cycle of parents, a negative or inconsistent quota, a
// child's guarantee above its parent's, a borrowing or lending limit on a queue without a cohort.
// Immutable once built, so any number of threads may read one.
#ifndef GPUFLEET_QUEUES_QUEUE_TREE_H_
#define GPUFLEET_QUEUES_QUEUE_TREE_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpufleet/queues/queue_spec.h"

namespace gpufleet::queues {

// The resources every tree has, in this order; other device kinds follow, sorted by name.
inline constexpr int kCpu = 0, kMemory = 1, kGpu = 2;

class QueueTree {
 public:
  // `resources`: extra resource names the caller will report amounts for (device kinds).
  static absl::StatusOr<QueueTree> Build(std::vector<QueueSpec> specs,
                                         const std::vector<std::string>& resources = {});

  int size() const { return static_cast<int>(specs_.size()); }
  int num_resources() const { return static_cast<int>(resource_names_.size()); }
  const std::vector<std::string>& resource_names() const { return resource_names_; }
  int FindResource(const std::string& name) const;  // -1 when the tree has no such resource
  // Whether any queue sets something for resource `r` (Kueue divides only such resources).
  bool configured(int r) const { return configured_[r]; }
  int Find(const std::string& queue) const;         // -1 when there is no such queue

  const QueueSpec& spec(int q) const { return specs_[q]; }
  const std::string& name(int q) const { return specs_[q].name; }
  int parent(int q) const { return parent_[q]; }  // -1 at the top
  const std::vector<int>& children(int q) const { return children_[q]; }
  const std::vector<int>& roots() const { return roots_; }
  bool leaf(int q) const { return children_[q].empty(); }
  int depth(int q) const { return depth_[q]; }  // 0 at the top
  // Every queue, parents before children; siblings older first (creation, then name).
  const std::vector<int>& top_down() const { return top_down_; }
  // The ancestor of `q` (or `q`) at depth `d` <= depth(q).
  int AncestorAt(int q, int d) const;
  // The lowest common ancestor of two queues, -1 when they have different roots.
  int CommonAncestor(int a, int b) const;
  // Older first: creation time, then name (KAI gives rounding leftovers to older queues).
  bool Older(int a, int b) const;

  double quota(int q, int r) const { return quota_[q * num_resources() + r]; }
  double limit(int q, int r) const { return limit_[q * num_resources() + r]; }
  double over_quota_weight(int q, int r) const { return oqw_[q * num_resources() + r]; }
  double guarantee(int q, int r) const { return guarantee_[q * num_resources() + r]; }
  double borrowing_limit(int q, int r) const { return borrowing_[q * num_resources() + r]; }
  double lending_limit(int q, int r) const { return lending_[q * num_resources() + r]; }
  int priority(int q) const { return specs_[q].quota.priority; }
  double weight(int q) const { return specs_[q].weight; }

 private:
  std::vector<QueueSpec> specs_;
  std::vector<std::string> resource_names_;
  std::vector<char> configured_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int> parent_, depth_, roots_, top_down_;
  std::vector<std::vector<int>> children_;
  std::vector<double> quota_, limit_, oqw_, guarantee_, borrowing_, lending_;
};

// Adds `sign` x `amounts` (per resource) to `leaf` and every ancestor in `values` (per queue x
// resource): the subtree totals a tree's state is kept in.
void AddAlongPath(const QueueTree& tree, int leaf, absl::Span<const double> amounts, double sign,
                  std::vector<double>* values);

// Checks a set of queue specs as a tree without keeping it: OK or the one-line error Build gives.
absl::Status ValidateQueueTree(const std::vector<QueueSpec>& specs);

// "12", "unlimited", "1.5Gi" style text for messages (cpu shown in cores, memory in bytes).
std::string FormatAmount(const std::string& resource, double amount);

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_QUEUE_TREE_H_
