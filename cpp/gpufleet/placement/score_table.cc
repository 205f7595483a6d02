#include "gpufleet/placement/score_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpufleet/placement/summary_scan.h"

namespace gpufleet {
namespace {

// Everything but the name decides where a pod may go and how nodes score for it; comparing the
// whole struct (with the name made equal) keeps that true when Pod gains a field.
bool SameShape(Pod& shape, const Pod& pod) {
  if (shape.cpu_milli != pod.cpu_milli || shape.memory_bytes != pod.memory_bytes ||
      shape.devices.size() != pod.devices.size())
    return false;
  // The numbers first: most shapes differ there, and comparing them calls no memcmp.
  for (size_t k = 0; k < pod.devices.size(); ++k) {
    const DeviceRequest &a = shape.devices[k], &b = pod.devices[k];
    if (a.count != b.count || a.core != b.core || a.memory_bytes != b.memory_bytes ||
        a.memory_ratio != b.memory_ratio)
      return false;
  }
  shape.name = pod.name;
  return shape == pod;
}

}  // namespace

void ScoreTable::Clear() {
  recent_.clear();
  numbered_.clear();
  scratch_ = Entry();
  masks_.clear();
  masks_nodes_ = -1;
  ++masks_generation_;
}

void ScoreTable::Reset(Entry& e, Kind kind, int num_nodes) {
  e.kind = kind;
  e.score.assign(num_nodes, kNoNode);
  e.seen.assign(num_nodes, 0);
  e.best = BestScoreTree();
  e.log_id = e.log_position = 0;
  e.models = nullptr;
  e.models_generation = 0;
}

void ScoreTable::SyncMasks(const ClusterState& state) {
  if (state.changes().id() == masks_log_id_ && state.num_nodes() == masks_nodes_) return;
  masks_.clear();
  masks_log_id_ = state.changes().id();
  masks_nodes_ = state.num_nodes();
  ++masks_generation_;
}

const uint8_t* ScoreTable::ModelMask(const ClusterState& state, const Pod& pod) {
  if (pod.gpu_models.empty()) return nullptr;
  const DeviceRequest* gpu = pod.Find(kGpu);
  if (gpu == nullptr) return nullptr;
  const int n = state.num_nodes();
  auto [it, added] =
      masks_.try_emplace(absl::StrCat(gpu->count, ":", absl::StrJoin(pod.gpu_models, "|")));
  std::vector<uint8_t>& mask = it->second;
  if (added) {
    mask.assign(n, 1);
    for (int i = 0; i < n; ++i) {
      int accepted = 0;
      for (const Device& d : state.node(i).devices)
        accepted += d.type == kGpu && std::find(pod.gpu_models.begin(), pod.gpu_models.end(),
                                                d.model) != pod.gpu_models.end();
      mask[i] = accepted >= gpu->count;
    }
  }
  return mask.data();
}

ScoreTable::Entry& ScoreTable::Find(const ClusterState& state, const PlacementStrategy& strategy,
                                    const Pod& pod, int number) {
  const int n = state.num_nodes();
  ++clock_;
  Entry* found = nullptr;
  if (number >= 0) {
    if (static_cast<size_t>(number) >= numbered_.size()) numbered_.resize(number + 1);
    found = &numbered_[number];
    if (found->strategy_id != strategy.instance_id()) {
      Reset(*found, found->kind, n);
      found->strategy_id = strategy.instance_id();
      found->request.reset();
    }
  } else {
    for (Entry& e : recent_) {
      if (e.strategy_id == strategy.instance_id() && SameShape(e.shape, pod)) {
        found = &e;
        break;
      }
    }
    if (found == nullptr) {
      if (static_cast<int>(recent_.size()) < kMaxEntries) {
        found = &recent_.emplace_back();
      } else {
        found = &*std::min_element(recent_.begin(), recent_.end(),
                                   [](const Entry& a, const Entry& b) {
                                     return a.last_use < b.last_use;
                                   });
      }
      Reset(*found, found->kind, n);
      found->strategy_id = strategy.instance_id();
      found->shape = pod;
      found->request.reset();
    }
  }
  found->last_use = clock_;
  return *found;
}

void ScoreTable::Prepare(const ClusterState& state, Entry& e, const Pod& pod, Kind kind) {
  const int n = state.num_nodes();
  if (e.kind != kind) Reset(e, kind, n);
  // New nodes start unseen (version 0 is never a node's version).
  e.score.resize(n, kNoNode);
  e.seen.resize(n, 0);
  SyncMasks(state);
  if (e.models_generation != masks_generation_) {
    e.models = ModelMask(state, pod);
    e.models_generation = masks_generation_;
  }
}

ScoreTable::Entry& ScoreTable::Scratch(const ClusterState& state, const Pod& pod, Kind kind) {
  const int n = state.num_nodes();
  scratch_.kind = kind;
  scratch_.score.resize(n);
  scratch_.seen.clear();
  SyncMasks(state);
  scratch_.models = ModelMask(state, pod);
  return scratch_;
}

bool ScoreTable::Changed(const ClusterState& state, Entry& e, std::vector<int>* changed) {
  const int n = state.num_nodes();
  const uint64_t* version = state.node_versions();
  uint64_t* seen = e.seen.data();
  const ChangeLog& log = state.changes();
  // Reading more entries than there are nodes costs more than comparing every version.
  const bool from_log = e.log_id == log.id() && e.log_position >= log.begin() &&
                        log.end() - e.log_position <= static_cast<uint64_t>(n) &&
                        (e.kind == Kind::kFeasible || e.best.size() == n);
  changed->clear();
  auto look = [&](int i) {
    if (seen[i] == version[i]) return;
    seen[i] = version[i];
    changed->push_back(i);
  };
  if (from_log) {
    for (uint64_t p = e.log_position; p < log.end(); ++p) look(log.at(p));
  } else {
    for (int i = 0; i < n; ++i) look(i);
  }
  e.log_id = log.id();
  e.log_position = log.end();
  return from_log;
}

void ScoreTable::MarkAllSeen(const ClusterState& state, Entry& e) {
  const int n = state.num_nodes();
  e.seen.assign(state.node_versions(), state.node_versions() + n);
  e.log_id = state.changes().id();
  e.log_position = state.changes().end();
}

}  // namespace gpufleet
