// The claims of the engine's tasks (Kubernetes Dynamic Resource Allocation): what each task's
// claims ask of a node of each profile (prepared by gpufleet.dra from the CEL verdicts,
// dra/prepared.h), what claims hold on every node, and which devices each placed task's claims
// hold. A session keeps a copy: a task with claims fits a node only when its claims can be
// allocated there, a statement allocates them when it reserves the task's node and gives them
// back when it is discarded, so a gang's claims come and go with the gang. The scheduler adopts
// the copy with the cycle. Claims are allocated by one objective, the strategy the user chose
// (pack unless set; first is Kubernetes' own choice).
//
// One ledger with the accounting: a DRA device may be devices of the node's accounting (a whole
// GPU, MIG instances, a GPU shared by capacity; its counterparts, worked out by
// gpufleet.dra.legacy). A device is in use for claims while a counterpart holds usage that claims
// did not put there, a shared device's core and memory capacity shrink by that usage, and a
// task's claims add their counterparts' grants to the task's allocation, so no other pod is given
// them.
//
// Queue trees count claims too: a task's claims take devices of DeviceClasses, and a queue's
// quota, limit or guarantee on a resource named like the class (or the name gpufleet.dra.engine
// maps it to) is charged with that many devices (queue_tree_session.h).
#ifndef GPUFLEET_ENGINE_DRA_LEDGER_H_
#define GPUFLEET_ENGINE_DRA_LEDGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/node_view.h"
#include "gpufleet/dra/prepared.h"
#include "gpufleet/dra/problem.h"

namespace gpufleet::engine {

// What holding one DRA device takes in the accounting, on one device of the node's spec.
struct DraCounterpart {
  int device = -1;  // index into the node's accounting devices
  // An exclusive DRA device: the grant it takes (100 and the whole memory for a whole device).
  int64_t core = 0;
  int64_t memory_bytes = 0;
  // A DRA device shared by capacity: its capacity slots that are the device's core percent and
  // memory bytes (in milli-units, as the DRA problem counts), or -1.
  int cores_slot = -1;
  int memory_slot = -1;
};

struct DraNodeClaims {
  int profile = -1;  // index of its table
  dra::Held held;    // what claims hold there (allocated before, and the engine's tasks')
  std::vector<std::vector<DraCounterpart>> counterparts;  // per DRA device
  // Per accounting device: core and memory that claims hold there (so the rest is other pods').
  std::vector<std::pair<int64_t, int64_t>> claim_usage;
};

struct DraHolding {
  std::string node;
  std::vector<dra::Choice> choices;
  std::vector<DeviceGrant> grants;  // what the choices take in the accounting
  std::vector<int> grant_devices;   // per grant: its index among the node's devices
};

class DraLedger {
 public:
  bool empty() const { return tasks_.empty(); }

  // Setup. A table per node profile; a node names its profile and what is held there; a task
  // its claims' requests per profile (null where they cannot be read: `refusals` says why).
  int AddTable(std::shared_ptr<const dra::NodeTable> table);
  void SetObjective(dra::Objective objective);
  dra::Objective objective() const { return objective_; }
  absl::Status SetNode(const std::string& node, DraNodeClaims claims);
  absl::Status SetTask(const std::string& task,
                       std::vector<std::shared_ptr<const dra::ClaimRequests>> by_profile,
                       std::vector<std::string> refusals);
  // The queue resources that claims count in ({DeviceClass or mapped name: the devices of its
  // classes that the slices publish}, the resource's capacity in the queue tree), then per task
  // the devices its claims take of each (pending claims and claims already allocated alike).
  absl::Status SetQueueResources(std::map<std::string, double> capacity);
  absl::Status SetQueueDevices(const std::string& task, std::map<std::string, double> devices);
  const std::map<std::string, double>& queue_resources() const { return queue_resources_; }
  // Null when the task's claims take no queue resource.
  const std::map<std::string, double>* QueueDevices(const std::string& task) const;
  bool HasClaims(const std::string& task) const { return tasks_.contains(task); }
  // Appends all that Solve reads of `node` apart from its accounting (its profile, its
  // counterparts, what claims hold there): nodes alike in this and in the accounting get the same
  // answer for every task (node classes, dra_node_classes.h).
  void AppendClassKey(const std::string& node, std::vector<int64_t>& key) const;
  // The task's claims on `node`, whose accounting `view` shows (by the ledger's objective).
  dra::Result Solve(const std::string& task, const std::string& node, const NodeView& view) const;
  // Holds an answer of Solve for the task; returns the grants it takes in the accounting (the
  // node's devices as `view` shows them).
  const DraHolding& Hold(const std::string& task, const std::string& node,
                         std::vector<dra::Choice> choices, const NodeView& view);
  // Gives back what the task's claims hold (nullopt if nothing); Restore puts it back.
  std::optional<DraHolding> Release(const std::string& task);
  void Restore(const std::string& task, DraHolding holding);
  // Gives back what the task's claims hold and forgets its claims (its job was deleted).
  void Forget(const std::string& task);
  const absl::flat_hash_map<std::string, DraHolding>& holdings() const { return holdings_; }

 private:
  struct TaskClaims {
    std::vector<std::shared_ptr<const dra::ClaimRequests>> by_profile;
    std::vector<std::string> refusals;
  };
  const dra::ClaimRequests* RequestsOn(const std::string& task, const DraNodeClaims& n) const;
  void Apply(const std::string& task, const DraHolding& h, int sign);

  // Answers by question (the requests, the node's profile, what is held there): alike nodes
  // and a task asked again on a node whose holds did not change cost no search. Shared by the
  // copies a session makes (they hold the same requests); cleared when a task's requests change,
  // since a freed request's address may be reused.
  struct AnswerCache {
    std::mutex mu;
    absl::flat_hash_map<std::string, dra::Result> answers;
  };

  std::vector<std::shared_ptr<const dra::NodeTable>> tables_;
  absl::flat_hash_map<std::string, DraNodeClaims> nodes_;
  absl::flat_hash_map<std::string, TaskClaims> tasks_;
  absl::flat_hash_map<std::string, DraHolding> holdings_;
  std::map<std::string, double> queue_resources_;
  dra::Objective objective_ = dra::Objective::kPack;
  absl::flat_hash_map<std::string, std::map<std::string, double>> queue_devices_;
  std::shared_ptr<AnswerCache> cache_ = std::make_shared<AnswerCache>();
};

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_DRA_LEDGER_H_
