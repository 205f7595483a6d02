// What one cycle decided: binds (with device allocations), evictions (with reasons), and for each
// job still short of its gang, why.
#ifndef GPUFLEET_ENGINE_DECISIONS_H_
#define GPUFLEET_ENGINE_DECISIONS_H_

#include <map>
#include <string>
#include <vector>

#include "gpufleet/accounting/allocation.h"
#include "gpufleet/engine/resources.h"

namespace gpufleet::engine {

struct BindDecision {
  std::string job;
  std::string task;
  Allocation allocation;  // node and devices
};

struct EvictDecision {
  std::string job;
  std::string task;
  std::string node;
  std::string reason;  // e.g. "preempted by job a (priority 10 > 1)"
};

struct QueueShare {
  std::string queue;
  double weight = 0;
  Resources allocated;          // by its own jobs' tasks: 0 for an inner queue, which holds no jobs
  Resources subtree_allocated;  // by the tasks of its own jobs and of every queue below it
  Resources request;
  Resources deserved;           // an inner queue's is its whole subtree's
  Resources held;    // held for this queue's starvation target (not in allocated)
  double share = 0;  // max over resources of subtree_allocated / deserved (0 when nothing is allocated)
};

// Capacity a node holds for the starvation target (reservation_ledger.h): taken, not idle.
struct HeldCapacity {
  std::string node;
  std::string job;      // the target it is held for
  Resources resources;  // cpu (milli), memory (bytes), gpu (whole-GPU equivalents)
};

struct CycleResult {
  std::vector<BindDecision> binds;
  std::vector<EvictDecision> evictions;
  std::map<std::string, std::string> pending;  // job -> reason
  std::vector<QueueShare> queues;
  std::vector<HeldCapacity> held;  // per node, at the end of the cycle
  std::string target;  // the starvation target this cycle ("" none), whether or not it started
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_DECISIONS_H_
