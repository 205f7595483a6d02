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
  Resources allocated;
  Resources request;
  Resources deserved;
  double share = 0;  // max over resources of allocated / deserved (0 when nothing is allocated)
};

struct CycleResult {
  std::vector<BindDecision> binds;
  std::vector<EvictDecision> evictions;
  std::map<std::string, std::string> pending;  // job -> reason
  std::vector<QueueShare> queues;
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_DECISIONS_H_
