// The reservation ledger: capacity held for the starvation target (kube-batch issue 561).
//
// Once a plugin names a target (the reservation plugin elects one), the ledger gives it a hold plan:
// for each task its gang still needs, the node and devices it will get, chosen where the least
// running work must drain first. The plan is remembered across cycles (the scheduler hands it back
// to the next session) and kept as long as the same job is the target and the plan still fits the
// nodes, so the work standing between the target and its start only shrinks.
//
// Within a session the ledger holds the free part of the plan (per device core and memory, the
// planned RDMA virtual functions, per node cpu and memory) as a reservation in the session's accounting, so every placement question
// sees it as taken and device strategies route around it. It also answers one feasibility
// question, consulted by Session::Predicate for every task of another job: would this placement
// eat into capacity the plan needs (for instance capacity an eviction just freed)? Together these
// keep the invariant the bound rests on: on a planned device, the work of other jobs never grows
// past what the plan leaves free, so the plan fits once the work running at election has drained.
//
// The target's own placements lift the holds (LiftFor) and the holds come back afterwards unless
// the target started; starting, deletion or losing the election releases them. Holds never exceed
// the plan, and the plan never exceeds what the gang still needs.
#ifndef GPUFLEET_ENGINE_RESERVATION_LEDGER_H_
#define GPUFLEET_ENGINE_RESERVATION_LEDGER_H_

#include <string>
#include <vector>

#include "gpufleet/accounting/allocation.h"
#include "gpufleet/engine/decisions.h"
#include "gpufleet/engine/session_types.h"

namespace gpufleet::engine {

class Session;

// What the scheduler remembers between cycles: the target and where each needed task will go.
struct HoldPlan {
  std::string job;                // empty: no target
  std::vector<Allocation> tasks;  // pod = task name; node, cpu, memory and device grants
  bool operator==(const HoldPlan&) const = default;
};

class ReservationLedger {
 public:
  // The plan remembered from the last cycle; Open decides whether it still applies.
  void Restore(HoldPlan remembered) { remembered_ = std::move(remembered); }
  // The plan to remember for the next cycle (empty unless Open ran and the target still waits).
  const HoldPlan& plan() const { return plan_; }

  // Makes `job` the target (-1: none). Keeps the remembered plan when it is for the same job and
  // still fits its nodes, otherwise chooses one; then holds the plan's free capacity.
  void Open(Session& s, int job);
  int target() const { return target_; }   // -1 once it started
  int elected() const { return elected_; }  // the job Open was given, if it was eligible
  bool holding() const { return !held_.empty(); }

  // Feasibility for tasks of other jobs (the target's tasks are always admitted): false when the
  // task's planned devices on `node` would use capacity the plan needs.
  bool Admits(const Session& s, const TaskInfo& task, int node) const;

  // Lifts the holds while the target's own tasks are placed; the destructor holds again unless
  // the target started (then the plan is done and nothing is held). A no-op for other jobs.
  class Lift {
   public:
    Lift(Session& s, int job);
    ~Lift();
    Lift(const Lift&) = delete;
    Lift& operator=(const Lift&) = delete;

   private:
    Session* s_ = nullptr;
  };

  // Places the target's needed tasks exactly as planned, all or none (after the ordinary
  // placement failed, e.g. because the best-scoring nodes are not the planned ones). True when
  // the target started.
  bool StartOnPlan(Session& s);

  // Held capacity per node, for reports.
  std::vector<HeldCapacity> Held(const Session& s) const;
  // GPUs per node whose only user is a hold (untouched otherwise), as (node, device index).
  std::vector<std::pair<int, int>> HeldWholeGpus(const Session& s) const;
  // A sentence for the target's pending reason.
  std::string Note(const Session& s) const;
  // Drops every hold from the session's accounting (session close).
  void Release(Session& s);

 private:
  bool PlanStillFits(const Session& s, int job, const HoldPlan& plan) const;
  HoldPlan Choose(const Session& s, int job) const;
  // The plan on the nodes `allowed` marks (all when null), adding what must drain to `total_cost`.
  HoldPlan ChooseWithin(const Session& s, int job, const std::vector<char>* allowed,
                        double* total_cost) const;
  void Hold(Session& s);
  void Unhold(Session& s);
  // Sums of the plan per node: cpu, memory and per local device core and memory.
  struct NodeNeed {
    int node = -1;
    int64_t cpu = 0, memory = 0;
    std::vector<int64_t> core, device_memory;  // indexed like the node's devices
    std::vector<std::vector<int>> vfs;         // per device: the planned VFs (flat indices)
  };
  std::vector<NodeNeed> Needs(const Session& s) const;

  HoldPlan remembered_, plan_;
  int target_ = -1;
  int elected_ = -1;
  std::vector<NodeNeed> needs_;      // of plan_, per planned node
  std::vector<Allocation> held_;     // reservations in the session's accounting
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_RESERVATION_LEDGER_H_
