#include "gpufleet/engine/queue_tree_session.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gpufleet/engine/queue_tree_specs.h"

namespace gpufleet::engine {
namespace {

constexpr double kTreeEps = 1e-9;

bool Over(double a, double b) { return a > b + kTreeEps * std::max(1.0, std::fabs(b)); }

}  // namespace

bool QueueTreeSession::Open(const Session& s, const QueueTreeOptions& options) {
  options_ = options;
  ready_ = false;
  std::vector<const Queue*> specs;
  for (const QueueInfo& q : s.queues()) specs.push_back(q.spec);
  // Device kinds that tasks ask for by name (MIG profiles) become resources of the tree.
  std::set<std::string> kinds;
  for (const TaskInfo& t : s.tasks())
    for (const DeviceRequest& d : t.pod->devices)
      if (absl::StartsWith(d.type, "mig-")) kinds.insert(d.type);
  // So do the resources that tasks' DRA claims count in (DeviceClasses or their mapped names).
  for (const auto& [resource, unused] : s.dra().queue_resources()) kinds.insert(resource);
  auto tree = queues::QueueTree::Build(TreeSpecsOf(specs), {kinds.begin(), kinds.end()});
  if (!tree.ok()) return false;
  tree_.emplace(*std::move(tree));
  return true;
}

void QueueTreeSession::Ready(Session& s) {
  const queues::QueueTree& t = *tree_;
  const int R = t.num_resources();
  const size_t n = static_cast<size_t>(t.size()) * R;
  task_amounts_.assign(s.tasks().size() * R, 0.0);
  task_queue_.assign(s.tasks().size(), 0);
  allocated_.assign(n, 0.0);
  request_.assign(n, 0.0);
  const bool claims = !s.dra().queue_resources().empty();
  for (const TaskInfo& task : s.tasks()) {
    double* a = &task_amounts_[static_cast<size_t>(task.id) * R];
    a[queues::kCpu] = static_cast<double>(task.pod->cpu_milli);
    a[queues::kMemory] = static_cast<double>(task.pod->memory_bytes);
    a[queues::kGpu] = task.pod->GpuShare();
    for (const DeviceRequest& d : task.pod->devices)
      if (int r = R > 3 ? t.FindResource(d.type) : -1; r >= 3) a[r] += d.count;
    if (const auto* devices = claims ? s.dra().QueueDevices(task.name()) : nullptr)
      for (const auto& [resource, count] : *devices)
        if (int r = t.FindResource(resource); r >= 3) a[r] += count;
    const JobInfo& job = s.job(task.job);
    task_queue_[task.id] = job.queue;
    const absl::Span<const double> amounts(a, R);
    if (task.occupies()) queues::AddAlongPath(t, job.queue, amounts, 1, &allocated_);
    if ((job.valid && task.status != TaskStatus::kReleasing) || task.occupies())
      queues::AddAlongPath(t, job.queue, amounts, 1, &request_);
  }
  capacity_.assign(R, 0.0);
  for (int r = 0; r < kNumResources; ++r) capacity_[r] = s.total()[r];
  if (R > 3) {
    const ClusterState& state = s.state();
    for (int i = 0; i < state.num_nodes(); ++i)
      for (const Device& d : state.node(i).devices)
        if (d.healthy)
          if (int r = t.FindResource(d.type); r >= 3) capacity_[r] += 1;
    for (const auto& [resource, devices] : s.dra().queue_resources())
      if (int r = t.FindResource(resource); r >= 3) capacity_[r] += devices;
  }
  usage_.clear();
  if (options_.k_value > 0) {
    std::vector<std::string> names(t.size());
    for (int q = 0; q < t.size(); ++q) names[q] = t.name(q);
    queues::UsageHistory& history = s.queue_memory().usage;
    history.Advance(s.now(), names, R, allocated_, capacity_, options_.usage);
    history.Normalized(names, R, s.now(), options_.usage, &usage_);
  }
  divider_.Divide(options_.policy, {&*tree_, capacity_, request_, usage_, options_.k_value},
                  &fair_share_);
  for (QueueInfo& q : s.queues())
    for (int r = 0; r < kNumResources; ++r) q.deserved[r] = fair_share_[q.id * R + r];
  if (options_.policy == queues::DivisionPolicy::kDrs) {
    kueue_ = std::make_unique<queues::KueueQuota>(t);
    for (int q = 0; q < t.size(); ++q) {
      if (!t.leaf(q)) continue;
      std::vector<double> held(allocated_.begin() + q * R, allocated_.begin() + (q + 1) * R);
      kueue_->AddUsage(q, held);
    }
  } else {
    kueue_.reset();
  }
  judge_ = std::make_unique<queues::ReclaimJudge>(
      queues::TreeView{&*tree_, allocated_, fair_share_, kueue_.get()}, options_.reclaim);
  order_key_.assign(t.size(), 0.0);
  at_fair_share_.assign(t.size(), 0);
  for (int q = 0; q < t.size(); ++q) Refresh(q);
  ready_ = true;
}

void QueueTreeSession::Refresh(int q) {
  order_key_[q] = kueue_ ? kueue_->Drs(q) : Saturation(q);
  bool at = true;
  for (int r = 0; r < R() && at; ++r) at = !Over(fair_share(q, r), allocated(q, r));
  at_fair_share_[q] = at;
}

void QueueTreeSession::OnTaskEvent(const TaskInfo& task, double sign) {
  if (!ready_) return;
  const int q = task_queue_[task.id];
  queues::AddAlongPath(*tree_, q, amounts(task.id), sign, &allocated_);
  if (kueue_) kueue_->AddUsage(q, amounts(task.id), sign);
  for (int a = q; a >= 0; a = tree_->parent(a)) Refresh(a);
}

double QueueTreeSession::Saturation(int q) const {
  double worst = 0;
  for (int r = 0; r < R(); ++r) {
    const double fs = fair_share(q, r), a = allocated(q, r);
    if (std::isinf(fs)) continue;
    worst = std::max(worst, fs > 0 ? a / fs : (a > kTreeEps ? 1e18 : 0.0));
  }
  return worst;
}

int QueueTreeSession::Compare(int a, int b) const {
  if (!ready_ || a == b) return 0;
  const queues::QueueTree& t = *tree_;
  const int lca = t.CommonAncestor(a, b);
  const int level = lca < 0 ? 0 : t.depth(lca) + 1;
  const int x = t.AncestorAt(a, level), y = t.AncestorAt(b, level);
  if (x == y) return 0;
  if (t.priority(x) != t.priority(y)) return t.priority(x) > t.priority(y) ? -1 : 1;
  const double sx = order_key_[x], sy = order_key_[y];
  if (std::fabs(sx - sy) <= 1e-9) return 0;
  return sx < sy ? -1 : 1;
}

bool QueueTreeSession::AtFairShare(int q) const { return ready_ && at_fair_share_[q]; }

std::string QueueTreeSession::Admits(int q, absl::Span<const double> amounts) const {
  if (!ready_) return "";
  const queues::QueueTree& t = *tree_;
  for (int n = q; n >= 0; n = t.parent(n))
    for (int r = 0; r < R(); ++r)
      if (amounts[r] > 0 && Over(allocated(n, r) + amounts[r], t.limit(n, r)))
        return absl::StrFormat("queue %s would exceed its %s limit (%s)", t.name(n),
                               t.resource_names()[r],
                               queues::FormatAmount(t.resource_names()[r], t.limit(n, r)));
  if (kueue_ && !kueue_->Fits(q, amounts))
    return absl::StrFormat("queue %s has no quota left (its own and its cohort's)", t.name(q));
  return "";
}

}  // namespace gpufleet::engine
