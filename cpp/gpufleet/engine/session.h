// A session: one scheduling cycle's view of the cluster. It copies the accounting (actions change
// the copy only, through statements), indexes jobs, tasks and queues, and holds the callbacks that
// plugins registered by name, recording which callback points each plugin registered (what a
// plugin answers is observed, never declared). The callbacks compose as the callback-point table
// says (callback_points.h: CombineText), as in Volcano's framework, except that preemptable /
// reclaimable victims are the intersection over all tiers (in Volcano the first answering tier
// decides: here a victim must satisfy gang safety and queue fairness at once, wherever the
// configuration lists them).
#ifndef GPUFLEET_ENGINE_SESSION_H_
#define GPUFLEET_ENGINE_SESSION_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/engine/callback_points.h"
#include "gpufleet/engine/decisions.h"
#include "gpufleet/engine/dra_ledger.h"
#include "gpufleet/engine/dra_node_classes.h"
#include "gpufleet/engine/gang_topology.h"
#include "gpufleet/engine/reservation_ledger.h"
#include "gpufleet/engine/session_types.h"
#include "gpufleet/placement/miss_cache.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/queues/queue_memory.h"

namespace gpufleet::engine {

class Statement;

using CompareFn = std::function<int(int a, int b)>;  // < 0 when a goes first
using PredicateFn = std::function<FitResult(const TaskInfo& task, int node)>;
using NodeScoreFn = std::function<double(const TaskInfo& task, int node)>;
using VictimsFn =
    std::function<std::vector<int>(const TaskInfo& preemptor, const std::vector<int>& candidates)>;
using QueueTestFn = std::function<bool(const QueueInfo& queue)>;
using JobTestFn = std::function<bool(const JobInfo& job)>;
// OK, or FailedPrecondition whose message says why the job may not go on.
using JobCheckFn = std::function<absl::Status(const JobInfo& job)>;
using AllocatableFn = std::function<bool(const QueueInfo& queue, const TaskInfo& task)>;
using TargetJobFn = std::function<int()>;  // a job id, or -1
// A task was placed (sign +1) or left its node (sign -1) in this session.
using TaskEventFn = std::function<void(const TaskInfo& task, double sign)>;

struct SessionInput {
  const ClusterState* state = nullptr;
  std::vector<const Job*> jobs;      // sorted by name
  std::vector<const Queue*> queues;  // sorted by name
  std::vector<int> waiting_cycles;   // per job, as the scheduler counted them
  std::vector<char> inqueue;         // per job: admitted in an earlier cycle
  std::vector<std::vector<std::string>> tiers;  // plugin names per tier
  double now = 0;  // the cycle's time in seconds (Scheduler clock)
  HoldPlan hold_plan;  // the starvation target's plan from the last cycle (reservation_ledger.h)
  // Plugin -> points its configuration switched off (Volcano's enable* switches): the plugin's
  // callbacks for them are not registered.
  std::map<std::string, PointSet> disabled;
  // What queue trees remember across cycles (queues/queue_memory.h); copied into the session,
  // and adopted back by the scheduler only when the cycle succeeds.
  const queues::QueueMemory* queue_memory = nullptr;
  // The tasks' claims (dra_ledger.h); copied into the session, adopted back with the cycle.
  const DraLedger* dra = nullptr;
};

class Session {
 public:
  // Validates nothing a plugin decides; unknown queues were rejected at submission.
  explicit Session(const SessionInput& in);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ClusterState& state() { return state_; }
  const ClusterState& state() const { return state_; }
  std::vector<TaskInfo>& tasks() { return tasks_; }
  std::vector<JobInfo>& jobs() { return jobs_; }
  std::vector<QueueInfo>& queues() { return queues_; }
  const std::vector<TaskInfo>& tasks() const { return tasks_; }
  const std::vector<JobInfo>& jobs() const { return jobs_; }
  const std::vector<QueueInfo>& queues() const { return queues_; }
  TaskInfo& task(int id) { return tasks_[id]; }
  JobInfo& job(int id) { return jobs_[id]; }
  QueueInfo& queue(int id) { return queues_[id]; }
  // Capacity of healthy nodes: cpu, memory and healthy GPUs.
  const Resources& total() const { return total_; }
  int cycle() const { return cycle_; }
  void set_cycle(int c) { cycle_ = c; }
  // The cycle's time in seconds on the scheduler's clock; actions that track time (jobtime) read
  // it instead of a wall clock so that tests and notebooks can drive time.
  double now() const { return now_; }

  // --- Registration (from Plugin::OnSessionOpen) ------------------------------------------------
  void AddJobOrderFn(const std::string& plugin, CompareFn fn);
  void AddQueueOrderFn(const std::string& plugin, CompareFn fn);
  void AddTaskOrderFn(const std::string& plugin, CompareFn fn);
  void AddPredicateFn(const std::string& plugin, PredicateFn fn);
  void AddNodeScoreFn(const std::string& plugin, NodeScoreFn fn);
  void AddPreemptableFn(const std::string& plugin, VictimsFn fn);
  void AddReclaimableFn(const std::string& plugin, VictimsFn fn);
  void AddOverusedFn(const std::string& plugin, QueueTestFn fn);
  void AddJobReadyFn(const std::string& plugin, JobTestFn fn);
  void AddJobValidFn(const std::string& plugin, JobCheckFn fn);
  void AddAllocatableFn(const std::string& plugin, AllocatableFn fn);
  void AddEnqueueableFn(const std::string& plugin, JobCheckFn fn);
  void AddTargetJobFn(const std::string& plugin, TargetJobFn fn);
  // Told of every placement and release in the session, as they happen (also when undone).
  void AddEventHandler(const std::string& plugin, TaskEventFn fn);
  // The device choice strategy (deviceshare); binpack when no plugin sets one.
  void SetDeviceStrategy(const std::string& plugin, std::unique_ptr<PlacementStrategy> strategy);
  // The topology gangs with a topology constraint are placed by (the gang-topology plugin).
  void SetGangTopology(std::unique_ptr<GangTopology> t) { gang_topology_ = std::move(t); }
  const GangTopology* gang_topology() const { return gang_topology_.get(); }
  // A plugin whose callbacks depend on more than a task's requests and constraints (e.g. Python
  // plugins) turns off the per-cycle infeasibility cache.
  void DisableFitCache() { fit_cache_enabled_ = false; }
  // A plugin whose predicates or scores look at more than a node's spec and usage (its name, the
  // job's other tasks) turns off node equivalence classes (placement/node_classes.h).
  void DisableNodeClasses() { classes_enabled_ = false; }

  // The points `plugin` registered callbacks for (switched-off ones excluded): what it answers.
  PointSet Answers(const std::string& plugin) const;
  // The points some plugin answers.
  PointSet Answered() const;

  // After plugins registered: asks job-valid, marks invalid jobs with their reason, and sets each
  // queue's demand (held + pending requests of its valid jobs) and admitted minimums. With
  // `admit_all` (no enqueue action configured) every valid job counts as admitted.
  void PrepareJobs(bool admit_all);

  // --- Questions (for actions) ------------------------------------------------------------------
  bool JobLess(int a, int b) const;
  bool QueueLess(int a, int b) const;
  bool TaskLess(int a, int b) const;
  FitResult Predicate(const TaskInfo& task, int node) const;
  double NodeScore(const TaskInfo& task, int node) const;
  std::vector<int> Preemptable(const TaskInfo& preemptor, const std::vector<int>& candidates) const;
  std::vector<int> Reclaimable(const TaskInfo& preemptor, const std::vector<int>& candidates) const;
  bool Overused(const QueueInfo& queue) const;
  bool JobReady(const JobInfo& job) const;
  absl::Status JobValid(const JobInfo& job) const;
  bool Allocatable(const QueueInfo& queue, const TaskInfo& task) const;
  absl::Status Enqueueable(const JobInfo& job) const;
  int TargetJob() const;
  bool HasPreemptable() const;
  bool HasReclaimable() const;
  const PlacementStrategy& strategy() const { return *strategy_; }

  // --- Node choice ------------------------------------------------------------------------------
  // The best node for a task among those passing every predicate, with its planned devices; when
  // none fits, a Kubernetes-style reason ("0/8 nodes are available: 3 Insufficient cpu, ...").
  // The Placer chooses (Placer::Choose), with the predicates and node scores as the query's
  // terms. A miss is kept per request key (the query's miss cache) until resources are freed.
  Placement BestNode(const TaskInfo& task);
  // The same question without the miss cache, for a task whose pod differs from the one its
  // request key was made from (the jobtime action restricts a task to one GPU model).
  Placement FindBestNode(const TaskInfo& task);

  // --- Bookkeeping used by Statement ------------------------------------------------------------
  void OnAllocate(TaskInfo& task, int node);
  void OnDeallocate(TaskInfo& task, TaskStatus back_to);
  // A statement that opened at `version` was discarded: answers cached since then are stale.
  void OnDiscard(uint64_t opened_at);
  void OnRelease();  // a running task was released: every cached "does not fit" is stale
  uint64_t version() const { return version_; }
  void RecordBind(const TaskInfo& task);
  void RecordEviction(const TaskInfo& task, const std::string& node, const std::string& reason);
  void UnrecordEviction(const TaskInfo& task);
  // A committed statement evicted tasks of `victim_job` and placed tasks of `preemptor_job`.
  void NotePreemption(int preemptor_job, int victim_job);
  const std::vector<std::pair<int, int>>& preemptions() const { return preemptions_; }
  queues::QueueMemory& queue_memory() { return queue_memory_; }
  // Capacity held for the starvation target (issue 561); Predicate consults it for every other
  // job's task. Opened by the plugin that elects the target.
  ReservationLedger& reservations() { return reservations_; }
  const ReservationLedger& reservations() const { return reservations_; }
  // The tasks' claims: a task with claims fits a node only where they can be allocated.
  DraLedger& dra() { return dra_; }
  const DraLedger& dra() const { return dra_; }

  // Decisions, pending reasons and queue shares; call once, after the actions ran.
  CycleResult Close();

 private:
  // Per queue id: what its own tasks and those of every queue below it hold.
  std::vector<Resources> SubtreeAllocated() const;
  int TierOf(const std::string& plugin) const;
  // Whether `plugin` may register a callback for `point` (not switched off); records it if so.
  bool Accept(const std::string& plugin, Point point);
  template <typename F>
  void AddTiered(std::vector<std::vector<F>>& slot, const std::string& plugin, F fn);
  int Compare(const std::vector<std::vector<CompareFn>>& fns, int a, int b) const;
  std::vector<int> Victims(const std::vector<std::vector<VictimsFn>>& fns,
                           const TaskInfo& preemptor, const std::vector<int>& candidates) const;

  DraLedger dra_;
  ClusterState state_;
  std::vector<TaskInfo> tasks_;
  std::vector<JobInfo> jobs_;
  std::vector<QueueInfo> queues_;
  Resources total_;
  int cycle_ = 0;
  double now_ = 0;
  std::vector<std::vector<std::string>> tiers_;
  std::map<std::string, PointSet> disabled_;
  std::map<std::string, PointSet> answers_;  // plugin -> the points it registered

  std::vector<std::vector<CompareFn>> job_order_, queue_order_, task_order_;
  std::vector<PredicateFn> predicates_;
  std::vector<NodeScoreFn> node_scores_;
  std::vector<std::vector<VictimsFn>> preemptable_, reclaimable_;
  std::vector<QueueTestFn> overused_;
  std::vector<JobTestFn> job_ready_;
  std::vector<JobCheckFn> job_valid_, enqueueable_;
  std::vector<AllocatableFn> allocatable_;
  std::vector<TargetJobFn> target_job_;
  std::vector<TaskEventFn> task_events_;
  std::unique_ptr<PlacementStrategy> strategy_;
  std::unique_ptr<GangTopology> gang_topology_;

  bool fit_cache_enabled_ = true;
  bool classes_enabled_ = true;
  // With claims, what the ledger keeps per node joins the node classes' key (null: no claims).
  DraNodeClassKey dra_classes_{state_, dra_};
  const NodeClassKey* class_key_ = nullptr;
  Placer placer_;      // node choice, with node classes of state_
  MissCache misses_;   // request key -> why nothing fits
  uint64_t version_ = 0;

  ReservationLedger reservations_;
  std::vector<int> bound_;    // task ids in bind order
  std::vector<EvictDecision> evictions_;
  std::vector<std::pair<int, int>> preemptions_;  // (preemptor job, victim job), committed
  queues::QueueMemory queue_memory_;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_SESSION_H_
