#include "gpufleet/placement/node_classes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpufleet/core/rdma_vf.h"

namespace gpufleet {
namespace {

std::string SpecSignature(const Node& n) {
  std::string s = absl::StrCat(n.cpu_milli, "/", n.memory_bytes, "/", n.max_pods, "/",
                               static_cast<int>(n.gpu_sharing), "|");
  for (const auto& [k, v] : n.labels) absl::StrAppend(&s, k, "=", v, ";");
  s += "|";
  for (const Taint& t : n.taints) absl::StrAppend(&s, t.key, "=", t.value, ":", t.effect, ";");
  s += "|";
  for (const Device& d : n.devices)
    absl::StrAppend(&s, d.type, ",", d.minor, ",", d.model, ",", d.healthy, ",", d.core, ",",
                    d.memory_bytes, ",", d.topology.socket, ",", d.topology.numa_node, ",",
                    d.topology.pcie_switch, ",", d.topology.bus_id, ",", VfCount(d), ";");
  s += "|";
  for (const auto& g : n.nvlink_groups) absl::StrAppend(&s, absl::StrJoin(g, ","), ";");
  return s;
}

}  // namespace

NodeClasses::NodeClasses(const ClusterState& state, const NodeClassKey* more)
    : state_(state), more_(more) {
  absl::flat_hash_map<std::string, int> specs;
  const int n = state.num_nodes();
  spec_id_.resize(n);
  class_of_.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    auto [it, fresh] = specs.emplace(SpecSignature(state.node(i)), static_cast<int>(specs.size()));
    spec_id_[i] = it->second;
  }
  for (int i = 0; i < n; ++i) Insert(i);
  seen_.assign(state.node_versions(), state.node_versions() + n);
  log_id_ = state.changes().id();
  log_position_ = state.changes().end();
}

bool NodeClasses::Sync() {
  const ChangeLog& log = state_.changes();
  const int n = state_.num_nodes();
  if (log.id() != log_id_ || n != static_cast<int>(seen_.size())) return false;
  auto refile = [&](int node) {
    if (seen_[node] == state_.node_version(node)) return;  // filed at this version already
    seen_[node] = state_.node_version(node);
    Update(node);
  };
  if (log_position_ >= log.begin()) {
    for (uint64_t p = log_position_; p < log.end(); ++p) refile(log.at(p));
  } else {
    for (int i = 0; i < n; ++i) refile(i);  // the log no longer reaches back: compare versions
  }
  log_position_ = log.end();
  return true;
}

std::vector<int64_t> NodeClasses::Key(int node) const {
  const NodeUsage& u = state_.usage(node);
  std::vector<int64_t> key = {spec_id_[node], u.cpu_used, u.memory_used, u.pods_used};
  const int first = state_.first_device(node);
  const int count = static_cast<int>(state_.node(node).devices.size());
  const std::vector<Device>& devices = state_.node(node).devices;
  const bool vf_nics = state_.has_vf_nics(node);
  for (int d = 0; d < count; ++d) {
    // Health is part of the spec signature too, but that was taken when the classes were built.
    key.push_back(state_.used_core()[first + d] * 2 + (devices[d].healthy ? 1 : 0));
    key.push_back(state_.used_memory()[first + d]);
    // Which VFs are held decides only which one a grant names; how many decides feasibility.
    if (!vf_nics) continue;
    const std::vector<uint8_t>& vfs = state_.vf_taken()[first + d];
    if (!vfs.empty()) key.push_back(std::count(vfs.begin(), vfs.end(), 1));
  }
  if (more_ != nullptr) more_->Append(node, key);
  return key;
}

void NodeClasses::Insert(int node) {
  auto [it, fresh] = index_.emplace(Key(node), static_cast<int>(classes_.size()));
  if (fresh) classes_.emplace_back();
  Class& c = classes_[it->second];
  if (c.nodes.empty()) {
    c.live_pos = static_cast<int>(live_.size());
    live_.push_back(it->second);
  }
  c.nodes.insert(node);
  class_of_[node] = it->second;
}

void NodeClasses::Remove(int node) {
  const int id = class_of_[node];
  Class& c = classes_[id];
  c.nodes.erase(node);
  if (c.nodes.empty()) {
    const int last = live_.back();
    live_[c.live_pos] = last;
    classes_[last].live_pos = c.live_pos;
    live_.pop_back();
    c.live_pos = -1;
  }
  class_of_[node] = -1;
}

void NodeClasses::Update(int node) {
  Remove(node);
  Insert(node);
}

}  // namespace gpufleet
