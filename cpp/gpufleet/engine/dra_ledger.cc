#include "gpufleet/engine/dra_ledger.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "gpufleet/dra/solve.h"

namespace gpufleet::engine {
namespace {

constexpr int64_t kMilli = 1000;  // DRA capacities are kept in milli-units

dra::Result Refused(std::string reason) {
  dra::Result r;
  r.verdict = dra::Verdict::kUnallocatable;
  r.reason = std::move(reason);
  return r;
}

constexpr size_t kMaxCachedAnswers = 100000;

template <typename T>
void AppendBytes(std::string& key, const std::vector<T>& v) {
  const size_t n = v.size();
  key.append(reinterpret_cast<const char*>(&n), sizeof(n));
  key.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Everything a question is made of but the table, which the profile names.
std::string QuestionKey(const dra::ClaimRequests* requests, int profile, const dra::Held& h) {
  std::string key;
  const uintptr_t r = reinterpret_cast<uintptr_t>(requests);
  key.append(reinterpret_cast<const char*>(&r), sizeof(r));
  key.append(reinterpret_cast<const char*>(&profile), sizeof(profile));
  AppendBytes(key, h.in_use);
  AppendBytes(key, h.sharers);
  AppendBytes(key, h.capacity_used);
  AppendBytes(key, h.counter_used);
  return key;
}

int64_t Amount(const dra::Amounts& amounts, int slot) {
  for (const auto& [s, a] : amounts)
    if (s == slot) return a;
  return 0;
}

}  // namespace

int DraLedger::AddTable(std::shared_ptr<const dra::NodeTable> table) {
  tables_.push_back(std::move(table));
  return static_cast<int>(tables_.size()) - 1;
}

void DraLedger::SetObjective(dra::Objective objective) {
  objective_ = objective;
  cache_ = std::make_shared<AnswerCache>();  // answers found by another objective
}

absl::Status DraLedger::SetNode(const std::string& node, DraNodeClaims claims) {
  if (claims.profile < 0 || claims.profile >= static_cast<int>(tables_.size()))
    return absl::InvalidArgumentError(absl::StrFormat("dra: node %s names no table", node));
  const dra::NodeTable& t = *tables_[claims.profile];
  if (absl::Status s = dra::ValidateHeld(t, claims.held); !s.ok())
    return absl::InvalidArgumentError(absl::StrFormat("dra: node %s: %s", node, s.message()));
  if (claims.counterparts.size() != t.devices.size())
    return absl::InvalidArgumentError(
        absl::StrFormat("dra: node %s: one list of counterparts per DRA device is needed", node));
  for (const auto& list : claims.counterparts)
    for (const DraCounterpart& c : list)
      if (c.device < 0 || c.device >= static_cast<int>(claims.claim_usage.size()) ||
          c.cores_slot >= static_cast<int>(t.capacity_total.size()) ||
          c.memory_slot >= static_cast<int>(t.capacity_total.size()))
        return absl::InvalidArgumentError(
            absl::StrFormat("dra: node %s: a counterpart is out of range", node));
  nodes_[node] = std::move(claims);
  return absl::OkStatus();
}

absl::Status DraLedger::SetTask(const std::string& task,
                                std::vector<std::shared_ptr<const dra::ClaimRequests>> by_profile,
                                std::vector<std::string> refusals) {
  if (by_profile.size() != tables_.size() || refusals.size() != tables_.size())
    return absl::InvalidArgumentError(
        absl::StrFormat("dra: task %s: one entry per node profile is needed", task));
  for (size_t p = 0; p < by_profile.size(); ++p)
    if (by_profile[p] != nullptr) {
      if (absl::Status s = dra::ValidateRequests(*tables_[p], *by_profile[p]); !s.ok())
        return absl::InvalidArgumentError(absl::StrFormat("dra: task %s: %s", task, s.message()));
    }
  tasks_[task] = TaskClaims{std::move(by_profile), std::move(refusals)};
  cache_ = std::make_shared<AnswerCache>();
  return absl::OkStatus();
}

absl::Status DraLedger::SetQueueResources(std::map<std::string, double> capacity) {
  for (const auto& [resource, devices] : capacity) {
    if (resource.empty() || resource == "cpu" || resource == "memory" || resource == "gpu" ||
        resource.rfind("mig-", 0) == 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "dra: queue resource \"%s\" is not a name for devices of claims (cpu, memory, gpu and "
          "mig-* count the engine's own requests)", resource));
    if (!(devices >= 0) || std::isinf(devices))
      return absl::InvalidArgumentError(absl::StrFormat(
          "dra: queue resource %s: capacity must be a number >= 0, got %g", resource, devices));
  }
  queue_resources_ = std::move(capacity);
  return absl::OkStatus();
}

absl::Status DraLedger::SetQueueDevices(const std::string& task,
                                        std::map<std::string, double> devices) {
  for (const auto& [resource, count] : devices) {
    if (!queue_resources_.contains(resource))
      return absl::InvalidArgumentError(absl::StrFormat(
          "dra: task %s: %s is not among the queue resources of claims", task, resource));
    if (!(count >= 0) || std::isinf(count))
      return absl::InvalidArgumentError(absl::StrFormat(
          "dra: task %s: %s devices must be a number >= 0, got %g", task, resource, count));
  }
  queue_devices_[task] = std::move(devices);
  return absl::OkStatus();
}

const std::map<std::string, double>* DraLedger::QueueDevices(const std::string& task) const {
  auto t = queue_devices_.find(task);
  return t == queue_devices_.end() ? nullptr : &t->second;
}

const dra::ClaimRequests* DraLedger::RequestsOn(const std::string& task,
                                                const DraNodeClaims& n) const {
  auto t = tasks_.find(task);
  return t == tasks_.end() ? nullptr : t->second.by_profile[n.profile].get();
}

void DraLedger::AppendClassKey(const std::string& node, std::vector<int64_t>& key) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    key.push_back(-1);  // no profile: claims fit nowhere there
    return;
  }
  const DraNodeClaims& n = it->second;
  key.push_back(n.profile);
  // The profile fixes every size below but the counterpart lists'.
  for (const std::vector<DraCounterpart>& list : n.counterparts) {
    key.push_back(static_cast<int64_t>(list.size()));
    for (const DraCounterpart& c : list)
      key.insert(key.end(), {c.device, c.core, c.memory_bytes, c.cores_slot, c.memory_slot});
  }
  key.insert(key.end(), n.held.in_use.begin(), n.held.in_use.end());
  key.insert(key.end(), n.held.sharers.begin(), n.held.sharers.end());
  key.insert(key.end(), n.held.capacity_used.begin(), n.held.capacity_used.end());
  key.insert(key.end(), n.held.counter_used.begin(), n.held.counter_used.end());
  for (const auto& [core, memory] : n.claim_usage) key.insert(key.end(), {core, memory});
}

dra::Result DraLedger::Solve(const std::string& task, const std::string& node,
                             const NodeView& view) const {
  auto t = tasks_.find(task);
  if (t == tasks_.end()) return Refused("the task has no claims");
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return Refused("the node publishes no devices for claims");
  const DraNodeClaims& n = it->second;
  const dra::ClaimRequests* requests = t->second.by_profile[n.profile].get();
  if (requests == nullptr) return Refused(t->second.refusals[n.profile]);
  // What other pods hold on the counterparts: exclusive devices are in use, shared ones shrink.
  dra::Held held = n.held;
  for (size_t d = 0; d < n.counterparts.size(); ++d)
    for (const DraCounterpart& c : n.counterparts[d]) {
      if (c.device >= view.num_devices()) continue;
      const int64_t core = view.used_core[c.device] - n.claim_usage[c.device].first;
      const int64_t memory = view.used_memory[c.device] - n.claim_usage[c.device].second;
      if (c.cores_slot >= 0 || c.memory_slot >= 0) {
        if (c.cores_slot >= 0) held.capacity_used[c.cores_slot] += std::max<int64_t>(core, 0) * kMilli;
        if (c.memory_slot >= 0) held.capacity_used[c.memory_slot] += std::max<int64_t>(memory, 0) * kMilli;
      } else if (core > 0 || memory > 0) {
        held.in_use[d] = 1;
      }
    }
  const std::string key = QuestionKey(requests, n.profile, held);
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto hit = cache_->answers.find(key);
    if (hit != cache_->answers.end()) return hit->second;
  }
  dra::Result r = dra::Solve(
      dra::BuildProblem(*tables_[n.profile], *requests, held, objective_, 200000));
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (cache_->answers.size() >= kMaxCachedAnswers) cache_->answers.clear();
  cache_->answers.emplace(key, r);
  return r;
}

const DraHolding& DraLedger::Hold(const std::string& task, const std::string& node,
                                  std::vector<dra::Choice> choices, const NodeView& view) {
  const DraNodeClaims& n = nodes_.at(node);
  const dra::ClaimRequests& r = *RequestsOn(task, n);
  DraHolding h;
  h.node = node;
  for (const dra::Choice& c : choices) {
    const dra::Request& req = r.requests[c.request];
    if (req.admin) continue;
    const dra::Candidate& cand = req.candidates[c.candidate];
    for (const DraCounterpart& cp : n.counterparts[c.device]) {
      if (cp.device >= view.num_devices()) continue;
      const bool shared = cp.cores_slot >= 0 || cp.memory_slot >= 0;
      // Milli-units back to percent and bytes, rounded up: the accounting never holds less.
      const int64_t core = shared ? (Amount(cand.capacity, cp.cores_slot) + kMilli - 1) / kMilli : cp.core;
      const int64_t memory =
          shared ? (Amount(cand.capacity, cp.memory_slot) + kMilli - 1) / kMilli : cp.memory_bytes;
      size_t g = 0;
      while (g < h.grant_devices.size() && h.grant_devices[g] != cp.device) ++g;
      if (g == h.grant_devices.size()) {
        const Device& dev = view.device(cp.device);
        h.grants.push_back(DeviceGrant{dev.type, dev.minor, 0, 0, {}});
        h.grant_devices.push_back(cp.device);
      }
      h.grants[g].core += core;
      h.grants[g].memory_bytes += memory;
    }
  }
  h.choices = std::move(choices);
  Apply(task, h, +1);
  return holdings_[task] = std::move(h);
}

std::optional<DraHolding> DraLedger::Release(const std::string& task) {
  auto it = holdings_.find(task);
  if (it == holdings_.end()) return std::nullopt;
  DraHolding h = std::move(it->second);
  holdings_.erase(it);
  Apply(task, h, -1);
  return h;
}

void DraLedger::Restore(const std::string& task, DraHolding holding) {
  Apply(task, holding, +1);
  holdings_[task] = std::move(holding);
}

void DraLedger::Forget(const std::string& task) {
  Release(task);
  tasks_.erase(task);
  queue_devices_.erase(task);
}

void DraLedger::Apply(const std::string& task, const DraHolding& h, int sign) {
  DraNodeClaims& n = nodes_.at(h.node);
  dra::HoldChoices(*tables_[n.profile], *RequestsOn(task, n), h.choices, sign, n.held);
  for (size_t g = 0; g < h.grants.size(); ++g) {
    auto& usage = n.claim_usage[h.grant_devices[g]];
    usage.first += sign * h.grants[g].core;
    usage.second += sign * h.grants[g].memory_bytes;
  }
}

}  // namespace gpufleet::engine
