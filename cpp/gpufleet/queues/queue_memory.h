// What a queue tree remembers from one scheduling cycle to the next: who preempted whom (so no
// preemption ever closes a cycle) and each queue's decayed past usage (time-aware fairness). The
// engine keeps one per scheduler and hands a copy to each cycle, adopting it when the cycle
// succeeds; the simulator keeps one per run.
#ifndef GPUFLEET_QUEUES_QUEUE_MEMORY_H_
#define GPUFLEET_QUEUES_QUEUE_MEMORY_H_

#include "gpufleet/queues/preemption_ledger.h"
#include "gpufleet/queues/usage_history.h"

namespace gpufleet::queues {

struct QueueMemory {
  PreemptionLedger ledger;
  UsageHistory usage;
  bool operator==(const QueueMemory&) const = default;
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_QUEUE_MEMORY_H_
