// The scheduler: the state that lives across cycles (nodes and running pods in the accounting,
// queues, jobs, which jobs were admitted and how long each gang has waited) and the cycle itself:
// open a session on a copy of the accounting, run the configured actions, close it, check the
// invariants and only then adopt the result. A cycle that fails (a plugin error) changes nothing.
#ifndef GPUFLEET_ENGINE_SCHEDULER_H_
#define GPUFLEET_ENGINE_SCHEDULER_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/accounting/object_lock.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/config.h"
#include "gpufleet/engine/decisions.h"
#include "gpufleet/engine/dra_ledger.h"
#include "gpufleet/engine/job.h"
#include "gpufleet/engine/queue.h"
#include "gpufleet/engine/reservation_ledger.h"
#include "gpufleet/queues/queue_memory.h"

namespace gpufleet::engine {

struct JobState {
  std::string name;
  std::string queue;
  int priority = 0;
  int min_available = 0;
  int tasks = 0;
  int running = 0;
  bool admitted = false;
  int waiting_cycles = 0;
};

class Scheduler {
 public:
  // Starts with DefaultConfigJson() and a queue named "default" (weight 1).
  Scheduler();
  absl::Status Configure(const Json& config);  // unchanged on error
  const Config& config() const { return config_; }

  // Nodes and pods outside any job live here (add nodes before running cycles).
  ClusterState& cluster() { return state_; }
  const ClusterState& cluster() const { return state_; }

  absl::Status AddQueue(const Queue& queue);     // AlreadyExists
  absl::Status UpdateQueue(const Queue& queue);  // NotFound
  absl::Status DeleteQueue(const std::string& name);  // FailedPrecondition while jobs use it
  std::vector<Queue> Queues() const;

  // Task names must be unique across jobs and must not name a pod the accounting already holds.
  // A job without a creation time (0) gets one after every job submitted before it.
  absl::Status SubmitJob(const Job& job);
  // Priority and min_available may change at any time; queue and tasks only while nothing runs.
  absl::Status UpdateJob(const Job& job);
  // Removes the job and releases its running tasks (it finished or was cancelled).
  absl::Status DeleteJob(const std::string& name);
  std::vector<JobState> Jobs() const;
  const Job* FindJob(const std::string& name) const;

  // The tasks' claims (dra_ledger.h): set up by gpufleet.dra.engine before cycles, kept by them.
  DraLedger& dra() { return dra_; }
  const DraLedger& dra() const { return dra_; }

  // Runs a cycle at the clock's time (RunCycle) or at `now` seconds (RunCycleAt; tests and
  // notebooks drive time this way). A cycle's time must not be before the last cycle's.
  absl::StatusOr<CycleResult> RunCycle();
  absl::StatusOr<CycleResult> RunCycleAt(double now);
  int cycles() const { return cycle_; }

  // Seconds, for actions that track time (jobtime); by default a monotonic wall clock that reads
  // 0 when the scheduler is created.
  void set_clock(std::function<double()> clock) { clock_ = std::move(clock); }
  double now() const { return clock_(); }
  double last_cycle_time() const { return last_now_; }

 private:
  absl::Status CheckTasks(const Job& job, const Job* replacing) const;
  // `q` added or replaced keeps the queues a tree (queue_tree_specs.h).
  absl::Status CheckQueueChange(const Queue& q) const;

  Config config_;
  std::vector<std::unique_ptr<Action>> actions_;
  bool admits_jobs_ = false;  // an action admits jobs (enqueue); else every valid job is admitted
  std::vector<Need> needs_;   // what the configuration's actions and plugins need answered
  ClusterState state_;
  std::map<std::string, Queue> queues_;
  std::map<std::string, Job> jobs_;
  std::map<std::string, std::string> task_owner_;  // task name -> job name
  std::map<std::string, int> waiting_;
  std::set<std::string> admitted_;
  HoldPlan hold_plan_;  // where the starvation target will go (reservation_ledger.h)
  queues::QueueMemory queue_memory_;  // preemption ledger and usage history of queue trees
  DraLedger dra_;
  int cycle_ = 0;
  int64_t last_creation_ = 0;
  std::function<double()> clock_;
  double last_now_ = 0;
};

// A Scheduler that many threads may use at once (Python's EngineScheduler): one lock for the
// scheduler and its accounting. Reads (jobs, queues, config, the cluster's queries) share it;
// submit, delete, configure and a whole cycle hold it alone, so a cycle never sees a job appear
// half-way and a reader never sees a cycle half-applied. cluster() is the accounting as a
// GuardedCluster borrowing this lock, with strategies of its own.
class GuardedScheduler {
 public:
  GuardedScheduler()
      : cluster_(GuardedCluster::Borrow(&scheduler_.cluster(), &lock_, &strategies_)) {}
  GuardedScheduler(const GuardedScheduler&) = delete;
  GuardedScheduler& operator=(const GuardedScheduler&) = delete;

  ObjectLock& lock() const { return lock_; }
  template <typename F>
  auto Read(F&& f) const {
    std::shared_lock<ObjectLock> hold(lock_);
    return std::forward<F>(f)(std::as_const(scheduler_));
  }
  template <typename F>
  auto Write(F&& f) {
    std::unique_lock<ObjectLock> hold(lock_);
    return std::forward<F>(f)(scheduler_);
  }
  GuardedCluster& cluster() { return cluster_; }

 private:
  mutable ObjectLock lock_{"engine"};
  StrategyCache strategies_;
  Scheduler scheduler_;
  GuardedCluster cluster_;  // declared after what it borrows
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_SCHEDULER_H_
