#include "gpufleet/queues/preemption_ledger.h"

namespace gpufleet::queues {

bool PreemptionLedger::WouldCycle(const std::string& preemptor, const std::string& victim) const {
  if (preemptor == victim) return true;
  // Is `preemptor` reachable from `victim` along "preempted" edges?
  std::vector<const std::string*> stack = {&victim};
  absl::flat_hash_set<std::string> seen = {victim};
  while (!stack.empty()) {
    const std::string* at = stack.back();
    stack.pop_back();
    auto it = out_.find(*at);
    if (it == out_.end()) continue;
    for (const std::string& next : it->second) {
      if (next == preemptor) return true;
      if (seen.insert(next).second) stack.push_back(&next);
    }
  }
  return false;
}

void PreemptionLedger::Record(const std::string& preemptor, const std::string& victim) {
  if (preemptor != victim) out_[preemptor].insert(victim);
}

size_t PreemptionLedger::num_edges() const {
  size_t n = 0;
  for (const auto& [from, to] : out_) n += to.size();
  return n;
}

}  // namespace gpufleet::queues
