#include "gpufleet/queues/queue_tree.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/core/quantity.h"

namespace gpufleet::queues {
namespace {

absl::Status QueueError(const std::string& queue, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("queue %s: %s", queue, why));
}

bool NonNegative(double x) { return x >= 0; }  // false for NaN

// The first problem with one queue's own numbers, or OK.
absl::Status CheckOwnQuota(const QueueSpec& s) {
  if (!(s.weight >= 0) || std::isinf(s.weight))
    return QueueError(s.name,
                      absl::StrFormat("weight must be a finite number >= 0, got %g", s.weight));
  for (const auto& [r, q] : s.quota.resources) {
    const std::string& resource = r;  // a lambda may not capture a structured binding before C++20
    auto field = [&](const char* f) { return absl::StrCat(resource, " ", f); };
    if (!NonNegative(q.quota)) return QueueError(s.name, field("quota must be >= 0 or unlimited"));
    if (!NonNegative(q.limit)) return QueueError(s.name, field("limit must be >= 0 or unlimited"));
    if (!NonNegative(q.guarantee) || std::isinf(q.guarantee))
      return QueueError(s.name, field("guarantee must be a finite amount >= 0"));
    if (!NonNegative(q.borrowing_limit))
      return QueueError(s.name, field("borrowing limit must be >= 0 or unlimited"));
    if (!NonNegative(q.lending_limit))
      return QueueError(s.name, field("lending limit must be >= 0 or unlimited"));
    if (std::isinf(q.over_quota_weight) || std::isnan(q.over_quota_weight))
      return QueueError(s.name, field("over-quota weight must be a finite number"));
    if (q.quota > q.limit)
      return QueueError(s.name, absl::StrFormat("%s quota %s is above its limit %s", r,
                                         FormatAmount(r, q.quota), FormatAmount(r, q.limit)));
    if (q.guarantee > q.limit)
      return QueueError(s.name, absl::StrFormat("%s guarantee %s is above its limit %s", r,
                                         FormatAmount(r, q.guarantee), FormatAmount(r, q.limit)));
    if (!std::isinf(q.lending_limit) && q.lending_limit > q.quota)
      return QueueError(s.name, absl::StrFormat("%s lending limit %s is above its quota %s", r,
                                         FormatAmount(r, q.lending_limit),
                                         FormatAmount(r, q.quota)));
    if (s.parent.empty() && !std::isinf(q.borrowing_limit))
      return QueueError(s.name, absl::StrFormat(
                             "%s borrowing limit needs a cohort to borrow from, and the queue has "
                             "no parent",
                             r));
    if (s.parent.empty() && !std::isinf(q.lending_limit))
      return QueueError(s.name, absl::StrFormat(
                             "%s lending limit needs a cohort to lend to, and the queue has no "
                             "parent",
                             r));
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatAmount(const std::string& resource, double amount) {
  if (std::isinf(amount)) return "unlimited";
  if (resource == "cpu") return absl::StrFormat("%g", amount / 1000.0);
  if (resource == "memory") return FormatBytes(static_cast<int64_t>(std::llround(amount)));
  return absl::StrFormat("%g", amount);
}

absl::StatusOr<QueueTree> QueueTree::Build(std::vector<QueueSpec> specs,
                                           const std::vector<std::string>& resources) {
  QueueTree t;
  const int n = static_cast<int>(specs.size());
  for (int q = 0; q < n; ++q) {
    const QueueSpec& s = specs[q];
    if (s.name.empty()) return absl::InvalidArgumentError("queue: name is missing");
    if (!t.index_.emplace(s.name, q).second) return QueueError(s.name, "appears twice");
    auto st = CheckOwnQuota(s);
    if (!st.ok()) return st;
  }
  t.parent_.assign(n, -1);
  for (int q = 0; q < n; ++q) {
    const std::string& p = specs[q].parent;
    if (p.empty()) continue;
    auto it = t.index_.find(p);
    if (it == t.index_.end())
      return QueueError(specs[q].name, absl::StrFormat("parent %s does not exist", p));
    t.parent_[q] = it->second;
  }
  // A cycle of parents: follow parents from every queue; a queue met twice on one walk closes it.
  std::vector<int> state(n, 0);  // 0 unvisited, 1 on the current walk, 2 known to reach a root
  for (int start = 0; start < n; ++start) {
    std::vector<int> walk;
    int q = start;
    while (q >= 0 && state[q] == 0) {
      state[q] = 1;
      walk.push_back(q);
      q = t.parent_[q];
    }
    if (q >= 0 && state[q] == 1) {
      std::vector<std::string> names;
      auto from = std::find(walk.begin(), walk.end(), q);
      for (auto it = from; it != walk.end(); ++it) names.push_back(specs[*it].name);
      names.push_back(specs[q].name);
      return absl::InvalidArgumentError(absl::StrFormat(
          "queues %s form a cycle of parents", absl::StrJoin(names, " -> ")));
    }
    for (int w : walk) state[w] = 2;
  }
  std::set<std::string> extra(resources.begin(), resources.end());
  for (const QueueSpec& s : specs)
    for (const auto& [r, unused] : s.quota.resources) extra.insert(r);
  t.resource_names_ = {"cpu", "memory", "gpu"};
  for (const std::string& r : extra)
    if (r != "cpu" && r != "memory" && r != "gpu") t.resource_names_.push_back(r);
  t.specs_ = std::move(specs);
  t.children_.assign(n, {});
  for (int q = 0; q < n; ++q) {
    if (t.specs_[q].quota.creation == 0) t.specs_[q].quota.creation = q + 1;
    (t.parent_[q] < 0 ? t.roots_ : t.children_[t.parent_[q]]).push_back(q);
  }
  auto older = [&t](int a, int b) { return t.Older(a, b); };
  std::sort(t.roots_.begin(), t.roots_.end(), older);
  for (auto& c : t.children_) std::sort(c.begin(), c.end(), older);
  t.depth_.assign(n, 0);
  t.top_down_ = t.roots_;
  for (size_t i = 0; i < t.top_down_.size(); ++i)
    for (int c : t.children_[t.top_down_[i]]) {
      t.depth_[c] = t.depth_[t.top_down_[i]] + 1;
      t.top_down_.push_back(c);
    }
  const int R = t.num_resources();
  t.configured_.assign(R, 0);
  for (auto* v : {&t.quota_, &t.guarantee_}) v->assign(n * R, 0.0);
  for (auto* v : {&t.limit_, &t.borrowing_, &t.lending_}) v->assign(n * R, kUnlimited);
  t.oqw_.assign(n * R, 0.0);
  for (int q = 0; q < n; ++q) {
    const QueueSpec& s = t.specs_[q];
    for (int r = 0; r < R; ++r) t.oqw_[q * R + r] = s.weight;
    for (const auto& [name, rq] : s.quota.resources) {
      const int r = t.FindResource(name);
      const int i = q * R + r;
      t.configured_[r] = 1;
      t.quota_[i] = rq.quota;
      t.limit_[i] = rq.limit;
      if (rq.over_quota_weight >= 0) t.oqw_[i] = rq.over_quota_weight;
      t.guarantee_[i] = rq.guarantee;
      t.borrowing_[i] = rq.borrowing_limit;
      t.lending_[i] = rq.lending_limit;
    }
  }
  // Guarantees nest: a child's fits in its parent's, and so do its siblings' together.
  for (int p = 0; p < n; ++p) {
    if (t.children_[p].empty()) continue;
    for (int r = 0; r < R; ++r) {
      double sum = 0;
      for (int c : t.children_[p]) {
        const double g = t.guarantee(c, r);
        sum += g;
        if (g > 0 && g > t.guarantee(p, r))
          return QueueError(t.name(c), absl::StrFormat(
                                    "%s guarantee %s is above its parent %s's guarantee %s",
                                    t.resource_names_[r], FormatAmount(t.resource_names_[r], g),
                                    t.name(p),
                                    FormatAmount(t.resource_names_[r], t.guarantee(p, r))));
      }
      if (sum > t.guarantee(p, r) * (1 + 1e-12) + 1e-9)
        return QueueError(t.name(p), absl::StrFormat(
                                  "its children's %s guarantees add up to %s, above its own %s",
                                  t.resource_names_[r], FormatAmount(t.resource_names_[r], sum),
                                  FormatAmount(t.resource_names_[r], t.guarantee(p, r))));
    }
  }
  return t;
}

int QueueTree::FindResource(const std::string& name) const {
  for (int r = 0; r < num_resources(); ++r)
    if (resource_names_[r] == name) return r;
  return -1;
}

int QueueTree::Find(const std::string& queue) const {
  auto it = index_.find(queue);
  return it == index_.end() ? -1 : it->second;
}

bool QueueTree::Older(int a, int b) const {
  const int64_t ca = specs_[a].quota.creation, cb = specs_[b].quota.creation;
  if (ca != cb) return ca < cb;
  return specs_[a].name < specs_[b].name;
}

int QueueTree::AncestorAt(int q, int d) const {
  while (depth_[q] > d) q = parent_[q];
  return q;
}

int QueueTree::CommonAncestor(int a, int b) const {
  while (depth_[a] > depth_[b]) a = parent_[a];
  while (depth_[b] > depth_[a]) b = parent_[b];
  while (a != b && a >= 0) {
    a = parent_[a];
    b = parent_[b];
  }
  return a;
}

void AddAlongPath(const QueueTree& tree, int leaf, absl::Span<const double> amounts, double sign,
                  std::vector<double>* values) {
  const int R = tree.num_resources();
  const int m = std::min(R, static_cast<int>(amounts.size()));
  for (int q = leaf; q >= 0; q = tree.parent(q))
    for (int r = 0; r < m; ++r) (*values)[q * R + r] += sign * amounts[r];
}

absl::Status ValidateQueueTree(const std::vector<QueueSpec>& specs) {
  return QueueTree::Build(specs).status();
}

}  // namespace gpufleet::queues
