// Who preempted whom, kept while both jobs exist, so that no job is ever preempted by one it
// preempted before, directly or through a chain (A preempts B, B preempts C, C may not preempt
// A). Fair-share rules alone cannot promise this once shares move between cycles (Kueue issue
// 3779): the ledger makes a preemption cycle impossible by construction. Edges are job names; a
// job that leaves (finished, deleted) takes its edges with it.
#ifndef GPUFLEET_QUEUES_PREEMPTION_LEDGER_H_
#define GPUFLEET_QUEUES_PREEMPTION_LEDGER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace gpufleet::queues {

class PreemptionLedger {
 public:
  // Whether `preemptor` preempting `victim` would close a cycle: `victim` preempted `preemptor`,
  // directly or through others.
  bool WouldCycle(const std::string& preemptor, const std::string& victim) const;
  void Record(const std::string& preemptor, const std::string& victim);
  // Drops every edge of jobs for which `alive` is false.
  template <typename Alive>
  void Prune(Alive alive) {
    for (auto it = out_.begin(); it != out_.end();) {
      if (!alive(it->first)) {
        out_.erase(it++);
        continue;
      }
      absl::erase_if(it->second, [&](const std::string& v) { return !alive(v); });
      if (it->second.empty())
        out_.erase(it++);
      else
        ++it;
    }
  }
  size_t num_edges() const;
  bool operator==(const PreemptionLedger&) const = default;

 private:
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> out_;  // preemptor -> victims
};

}  // namespace gpufleet::queues

#endif  // GPUFLEET_QUEUES_PREEMPTION_LEDGER_H_
