#include "gpufleet/engine/session.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gpufleet/accounting/device_fit.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/engine/statement.h"
#include "gpufleet/placement/placer.h"

namespace gpufleet::engine {
namespace {

// Everything a node-feasibility answer can depend on, as a string (interned to an int key).
std::string ConstraintSignature(const Pod& p) {
  std::string s;
  for (const auto& [k, v] : p.node_selector) absl::StrAppend(&s, k, "=", v, ";");
  s += "|";
  for (const Toleration& t : p.tolerations)
    absl::StrAppend(&s, t.key, ",", t.op, ",", t.value, ",", t.effect, ";");
  return s;
}

std::string RequestSignature(const Pod& p) {
  std::string s = absl::StrCat(p.cpu_milli, "/", p.memory_bytes, "/", static_cast<int>(p.scope));
  for (const DeviceRequest& r : p.devices)
    absl::StrAppend(&s, "|", r.type, ",", r.count, ",", r.core, ",", r.memory_bytes, ",",
                    r.memory_ratio);
  absl::StrAppend(&s, "|", absl::StrJoin(p.gpu_models, ","), "|", ConstraintSignature(p));
  return s;
}

int Intern(absl::flat_hash_map<std::string, int>& table, std::string key) {
  auto [it, inserted] = table.emplace(std::move(key), static_cast<int>(table.size()));
  return it->second;
}

}  // namespace

const char* TaskStatusName(TaskStatus s) {
  switch (s) {
    case TaskStatus::kPending: return "pending";
    case TaskStatus::kAllocated: return "allocated";
    case TaskStatus::kRunning: return "running";
    case TaskStatus::kReleasing: return "releasing";
  }
  return "pending";
}

Session::Session(const SessionInput& in)
    : state_(*in.state), now_(in.now), tiers_(in.tiers), disabled_(in.disabled) {
  for (int i = 0; i < state_.num_nodes(); ++i) {
    const Node& n = state_.node(i);
    total_[0] += static_cast<double>(n.cpu_milli);
    total_[1] += static_cast<double>(n.memory_bytes);
    total_[2] += state_.usage(i).gpu_count;
  }
  std::map<std::string, int> queue_index;
  for (const Queue* q : in.queues) {
    QueueInfo info;
    info.id = static_cast<int>(queues_.size());
    info.spec = q;
    info.deserved = Resources::Unlimited();
    queue_index[q->name] = info.id;
    queues_.push_back(std::move(info));
  }
  absl::flat_hash_map<std::string, int> request_keys, constraint_keys;
  for (size_t j = 0; j < in.jobs.size(); ++j) {
    const Job* spec = in.jobs[j];
    JobInfo job;
    job.id = static_cast<int>(j);
    job.spec = spec;
    job.queue = queue_index.at(spec->queue);  // the scheduler rejects unknown queues
    job.waiting_cycles = j < in.waiting_cycles.size() ? in.waiting_cycles[j] : 0;
    job.inqueue = j < in.inqueue.size() && in.inqueue[j];
    for (size_t k = 0; k < spec->tasks.size(); ++k) {
      TaskInfo t;
      t.id = static_cast<int>(tasks_.size());
      t.job = job.id;
      t.pod = &spec->tasks[k];
      t.request = ResourcesOf(*t.pod);
      t.best_effort = IsBestEffort(*t.pod);
      t.request_key = Intern(request_keys, RequestSignature(*t.pod));
      t.constraint_key = Intern(constraint_keys, ConstraintSignature(*t.pod));
      if (const Allocation* a = state_.FindAllocation(t.name())) {
        t.status = TaskStatus::kRunning;
        t.node = state_.FindNode(a->node);
        job.allocated += t.request;
        ++job.occupied;
      }
      if (static_cast<int>(k) < spec->min_available) job.min_request += t.request;
      job.tasks.push_back(t.id);
      tasks_.push_back(t);
    }
    job.occupied_at_open = job.occupied;
    queues_[job.queue].jobs.push_back(job.id);
    queues_[job.queue].allocated += job.allocated;
    jobs_.push_back(std::move(job));
  }
  job_order_.resize(tiers_.size());
  queue_order_.resize(tiers_.size());
  task_order_.resize(tiers_.size());
  preemptable_.resize(tiers_.size());
  reclaimable_.resize(tiers_.size());
  auto binpack = MakeStrategy("binpack");
  strategy_ = binpack.ok() ? *std::move(binpack) : nullptr;
  reservations_.Restore(in.hold_plan);
  if (in.queue_memory != nullptr) queue_memory_ = *in.queue_memory;
  if (in.dra != nullptr && !in.dra->empty()) {
    // Whether claims fit depends on the task's claims, not only its requests: no shared misses.
    // It depends on what the ledger keeps per node too, so that joins the node classes' key.
    dra_ = *in.dra;
    fit_cache_enabled_ = false;
    class_key_ = &dra_classes_;
  } else if (in.dra != nullptr && !in.dra->queue_resources().empty()) {
    dra_ = *in.dra;  // only what claims count in queue trees (all of them allocated before)
  }
}

Session::~Session() = default;

void Session::PrepareJobs(bool admit_all) {
  for (JobInfo& j : jobs_) {
    absl::Status why = JobValid(j);
    j.valid = why.ok();
    if (!j.valid) {
      j.reason = absl::StrCat("invalid: ", why.message());
      j.inqueue = false;
      continue;
    }
    if (admit_all || j.occupied > 0) j.inqueue = true;
    QueueInfo& q = queues_[j.queue];
    for (int t : j.tasks)
      if (tasks_[t].status != TaskStatus::kReleasing) q.request += tasks_[t].request;
    if (j.inqueue && j.occupied < j.min_available()) q.inqueue += j.min_request;
  }
}

int Session::TierOf(const std::string& plugin) const {
  for (size_t t = 0; t < tiers_.size(); ++t)
    for (const std::string& name : tiers_[t])
      if (name == plugin) return static_cast<int>(t);
  return static_cast<int>(tiers_.size()) - 1;  // plugins outside the tiers (tests) go last
}

template <typename F>
void Session::AddTiered(std::vector<std::vector<F>>& slot, const std::string& plugin, F fn) {
  if (slot.empty()) slot.resize(1);
  int tier = std::max(0, TierOf(plugin));
  slot[std::min<size_t>(tier, slot.size() - 1)].push_back(std::move(fn));
}

bool Session::Accept(const std::string& plugin, Point point) {
  const int bit = static_cast<int>(point);
  auto off = disabled_.find(plugin);
  if (off != disabled_.end() && off->second.test(bit)) return false;
  answers_[plugin].set(bit);
  return true;
}

PointSet Session::Answers(const std::string& plugin) const {
  auto it = answers_.find(plugin);
  return it == answers_.end() ? PointSet() : it->second;
}

PointSet Session::Answered() const {
  PointSet all;
  for (const auto& [plugin, points] : answers_) all |= points;
  return all;
}

void Session::AddJobOrderFn(const std::string& p, CompareFn fn) { if (Accept(p, Point::kJobOrder)) AddTiered(job_order_, p, std::move(fn)); }
void Session::AddQueueOrderFn(const std::string& p, CompareFn fn) { if (Accept(p, Point::kQueueOrder)) AddTiered(queue_order_, p, std::move(fn)); }
void Session::AddTaskOrderFn(const std::string& p, CompareFn fn) { if (Accept(p, Point::kTaskOrder)) AddTiered(task_order_, p, std::move(fn)); }
void Session::AddPreemptableFn(const std::string& p, VictimsFn fn) { if (Accept(p, Point::kPreemptable)) AddTiered(preemptable_, p, std::move(fn)); }
void Session::AddReclaimableFn(const std::string& p, VictimsFn fn) { if (Accept(p, Point::kReclaimable)) AddTiered(reclaimable_, p, std::move(fn)); }
void Session::AddPredicateFn(const std::string& p, PredicateFn fn) { if (Accept(p, Point::kPredicates)) predicates_.push_back(std::move(fn)); }
void Session::AddNodeScoreFn(const std::string& p, NodeScoreFn fn) { if (Accept(p, Point::kNodeScore)) node_scores_.push_back(std::move(fn)); }
void Session::AddOverusedFn(const std::string& p, QueueTestFn fn) { if (Accept(p, Point::kOverused)) overused_.push_back(std::move(fn)); }
void Session::AddJobReadyFn(const std::string& p, JobTestFn fn) { if (Accept(p, Point::kJobReady)) job_ready_.push_back(std::move(fn)); }
void Session::AddJobValidFn(const std::string& p, JobCheckFn fn) { if (Accept(p, Point::kJobValid)) job_valid_.push_back(std::move(fn)); }
void Session::AddAllocatableFn(const std::string& p, AllocatableFn fn) { if (Accept(p, Point::kAllocatable)) allocatable_.push_back(std::move(fn)); }
void Session::AddEnqueueableFn(const std::string& p, JobCheckFn fn) { if (Accept(p, Point::kEnqueueable)) enqueueable_.push_back(std::move(fn)); }
void Session::AddTargetJobFn(const std::string& p, TargetJobFn fn) { if (Accept(p, Point::kTargetJob)) target_job_.push_back(std::move(fn)); }
void Session::SetDeviceStrategy(const std::string& p, std::unique_ptr<PlacementStrategy> s) { if (Accept(p, Point::kDeviceStrategy)) strategy_ = std::move(s); }
void Session::AddEventHandler(const std::string&, TaskEventFn fn) { task_events_.push_back(std::move(fn)); }

int Session::Compare(const std::vector<std::vector<CompareFn>>& fns, int a, int b) const {
  for (const auto& tier : fns)
    for (const CompareFn& fn : tier) {
      int c = fn(a, b);
      if (c != 0) return c;
    }
  return 0;
}

bool Session::JobLess(int a, int b) const {
  int c = Compare(job_order_, a, b);
  if (c != 0) return c < 0;
  if (jobs_[a].spec->creation != jobs_[b].spec->creation)
    return jobs_[a].spec->creation < jobs_[b].spec->creation;
  return a < b;
}

bool Session::QueueLess(int a, int b) const {
  int c = Compare(queue_order_, a, b);
  return c != 0 ? c < 0 : a < b;
}

bool Session::TaskLess(int a, int b) const {
  int c = Compare(task_order_, a, b);
  return c != 0 ? c < 0 : a < b;
}

FitResult Session::Predicate(const TaskInfo& task, int node) const {
  for (const PredicateFn& fn : predicates_) {
    FitResult f = fn(task, node);
    if (!f.ok()) return f;
  }
  if (!reservations_.Admits(*this, task, node))
    return FitResult::Unschedulable("capacity held for the reservation target");
  if (!dra_.empty() && dra_.HasClaims(task.name()) &&
      dra_.Solve(task.name(), state_.node(node).name, state_.View(node)).verdict !=
          dra::Verdict::kAllocated)
    return FitResult::Unschedulable("cannot allocate the pod's claims");
  return FitResult::Ok();
}

double Session::NodeScore(const TaskInfo& task, int node) const {
  double s = 0.0;
  for (const NodeScoreFn& fn : node_scores_) s += fn(task, node);
  return s;
}

std::vector<int> Session::Victims(const std::vector<std::vector<VictimsFn>>& fns,
                                  const TaskInfo& preemptor,
                                  const std::vector<int>& candidates) const {
  std::vector<int> victims = candidates;
  bool answered = false;
  for (const auto& tier : fns)
    for (const VictimsFn& fn : tier) {
      answered = true;
      std::vector<int> allowed = fn(preemptor, victims);
      std::sort(allowed.begin(), allowed.end());
      std::vector<int> kept;
      for (int v : victims)
        if (std::binary_search(allowed.begin(), allowed.end(), v)) kept.push_back(v);
      victims = std::move(kept);
    }
  return answered ? victims : std::vector<int>{};
}

std::vector<int> Session::Preemptable(const TaskInfo& p, const std::vector<int>& c) const {
  return Victims(preemptable_, p, c);
}
std::vector<int> Session::Reclaimable(const TaskInfo& p, const std::vector<int>& c) const {
  return Victims(reclaimable_, p, c);
}

bool Session::HasPreemptable() const {
  for (const auto& tier : preemptable_)
    if (!tier.empty()) return true;
  return false;
}

bool Session::HasReclaimable() const {
  for (const auto& tier : reclaimable_)
    if (!tier.empty()) return true;
  return false;
}

bool Session::Overused(const QueueInfo& q) const {
  for (const auto& fn : overused_)
    if (fn(q)) return true;
  return false;
}

bool Session::JobReady(const JobInfo& j) const {
  for (const auto& fn : job_ready_)
    if (!fn(j)) return false;
  return true;
}

absl::Status Session::JobValid(const JobInfo& j) const {
  for (const auto& fn : job_valid_) RETURN_IF_ERROR(fn(j));
  return absl::OkStatus();
}

bool Session::Allocatable(const QueueInfo& q, const TaskInfo& t) const {
  for (const auto& fn : allocatable_)
    if (!fn(q, t)) return false;
  return true;
}

absl::Status Session::Enqueueable(const JobInfo& j) const {
  for (const auto& fn : enqueueable_) RETURN_IF_ERROR(fn(j));
  return absl::OkStatus();
}

int Session::TargetJob() const {
  for (const auto& fn : target_job_) {
    int j = fn();
    if (j >= 0) return j;
  }
  return -1;
}

namespace {

// The session's predicates and node scores for one task, as the Placer's terms.
class TaskTerms : public PlacementTerms {
 public:
  TaskTerms(const Session& session, const TaskInfo& task, bool classes,
            const NodeClassKey* class_key)
      : session_(session), task_(task), classes_(classes), class_key_(class_key) {}
  FitResult Filter(const Pod&, int node) const override { return session_.Predicate(task_, node); }
  double Score(const Pod&, int node) const override { return session_.NodeScore(task_, node); }
  bool UsesNodeClasses() const override { return classes_; }
  const NodeClassKey* ClassKey() const override { return class_key_; }

 private:
  const Session& session_;
  const TaskInfo& task_;
  bool classes_;
  const NodeClassKey* class_key_;
};

}  // namespace

Placement Session::BestNode(const TaskInfo& task) {
  const TaskTerms terms(*this, task, classes_enabled_, class_key_);
  return placer_.Choose(state_, {.pod = *task.pod,
                                 .strategy = *strategy_,
                                 .terms = &terms,
                                 .misses = fit_cache_enabled_ ? &misses_ : nullptr,
                                 .miss_key = task.request_key,
                                 .miss_version = version_});
}

Placement Session::FindBestNode(const TaskInfo& task) {
  const TaskTerms terms(*this, task, classes_enabled_, class_key_);
  return placer_.Choose(state_, {.pod = *task.pod, .strategy = *strategy_, .terms = &terms});
}

void Session::OnAllocate(TaskInfo& task, int node) {
  task.status = TaskStatus::kAllocated;
  task.node = node;
  JobInfo& job = jobs_[task.job];
  job.allocated += task.request;
  ++job.occupied;
  queues_[job.queue].allocated += task.request;
  ++version_;
  for (const TaskEventFn& fn : task_events_) fn(task, 1.0);
}

void Session::OnDeallocate(TaskInfo& task, TaskStatus back_to) {
  task.status = back_to;
  task.node = -1;
  JobInfo& job = jobs_[task.job];
  job.allocated -= task.request;
  --job.occupied;
  queues_[job.queue].allocated -= task.request;
  ++version_;
  for (const TaskEventFn& fn : task_events_) fn(task, -1.0);
}

void Session::OnDiscard(uint64_t opened_at) { misses_.ForgetSince(opened_at); }

void Session::OnRelease() { misses_.ForgetAll(); }

void Session::RecordBind(const TaskInfo& task) { bound_.push_back(task.id); }

void Session::RecordEviction(const TaskInfo& task, const std::string& node,
                             const std::string& reason) {
  evictions_.push_back(EvictDecision{jobs_[task.job].name(), task.name(), node, reason});
}

void Session::NotePreemption(int preemptor_job, int victim_job) {
  if (preemptor_job != victim_job) preemptions_.emplace_back(preemptor_job, victim_job);
}

void Session::UnrecordEviction(const TaskInfo& task) {
  std::erase_if(evictions_, [&](const EvictDecision& e) { return e.task == task.name(); });
}

std::vector<Resources> Session::SubtreeAllocated() const {
  // Only leaves hold jobs, so an inner queue's own allocation is 0; what it holds is its
  // descendants' (KAI's departments and Kueue's cohorts count usage the same way).
  std::map<std::string, int> index;
  for (const QueueInfo& q : queues_) index[q.name()] = q.id;
  std::vector<Resources> subtree(queues_.size());
  for (const QueueInfo& q : queues_) {
    // Trees are checked acyclic when loaded; the step bound only keeps a bad one from looping.
    int id = q.id;
    for (size_t steps = 0; id >= 0 && steps <= queues_.size(); ++steps) {
      subtree[id] += q.allocated;
      const auto parent = index.find(queues_[id].spec->parent);
      id = parent == index.end() ? -1 : parent->second;
    }
  }
  return subtree;
}

CycleResult Session::Close() {
  CycleResult out;
  // Held capacity is reported as taken, then handed back: the scheduler adopts no holds.
  out.held = reservations_.Held(*this);
  out.target = reservations_.elected() >= 0 ? jobs_[reservations_.elected()].name() : "";
  const int target = reservations_.target();
  const std::string note = reservations_.Note(*this);
  reservations_.Release(*this);
  for (int id : bound_) {
    const TaskInfo& t = tasks_[id];
    if (t.status != TaskStatus::kAllocated) continue;  // evicted again later in the cycle
    const Allocation* a = state_.FindAllocation(t.name());
    if (a == nullptr) continue;
    out.binds.push_back(BindDecision{jobs_[t.job].name(), t.name(), *a});
  }
  out.evictions = evictions_;
  for (const JobInfo& j : jobs_) {
    const int pending = j.pending_count(tasks_);
    if (pending == 0 && j.valid) continue;
    std::string reason = j.reason;
    if (reason.empty())
      reason = absl::StrFormat("%d/%d tasks placed (min_available %d); not considered this cycle",
                               j.occupied, j.tasks.size(), j.min_available());
    if (j.id == target && !note.empty()) reason += "; " + note;
    out.pending[j.name()] = reason;
  }
  const std::vector<Resources> subtree = SubtreeAllocated();
  for (const QueueInfo& q : queues_) {
    QueueShare s;
    s.queue = q.name();
    s.weight = q.spec->weight;
    s.allocated = q.allocated;
    s.subtree_allocated = subtree[q.id];
    s.request = q.request;
    s.deserved = q.deserved;
    if (target >= 0 && jobs_[target].queue == q.id)
      for (const HeldCapacity& h : out.held) s.held += h.resources;
    for (int r = 0; r < kNumResources; ++r) {
      double d = q.deserved[r], a = s.subtree_allocated[r];
      double share = d > 0 ? a / d : (a > 0 ? 1.0 : 0.0);
      s.share = std::max(s.share, share);
    }
    out.queues.push_back(s);
  }
  return out;
}

}  // namespace gpufleet::engine
