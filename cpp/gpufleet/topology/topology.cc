#include "gpufleet/topology/topology.h"

#include <algorithm>
#include <numeric>
#include <regex>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpufleet::topology {
namespace {

absl::Status Invalid(const std::string& what) { return absl::InvalidArgumentError(what); }

bool MemberSelectsNode(const HyperNodeMember& m, const Node& node, const std::regex* pattern) {
  if (!m.exact.empty()) return node.name == m.exact;
  if (pattern != nullptr) return std::regex_match(node.name, *pattern);
  if (m.labels.empty()) return false;
  for (const auto& [k, v] : m.labels) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

Topology Topology::FromPaths(std::vector<Level> levels,
                             const std::vector<std::vector<std::string>>& paths) {
  Topology t;
  const int n = static_cast<int>(paths.size());
  const int num_levels = static_cast<int>(levels.size());
  t.position_.assign(n, -1);
  for (int i = 0; i < n; ++i) (paths[i].empty() ? t.outside_ : t.order_).push_back(i);
  // Domain by domain, in the order of their paths (ties end in the node's index).
  std::stable_sort(t.order_.begin(), t.order_.end(),
                   [&](int a, int b) { return paths[a] < paths[b]; });
  for (size_t p = 0; p < t.order_.size(); ++p) t.position_[t.order_[p]] = static_cast<int>(p);
  t.levels_.resize(num_levels);
  for (int l = 0; l < num_levels; ++l) t.levels_[l].level = std::move(levels[l]);
  const int positions = static_cast<int>(t.order_.size());
  t.leaf_of_pos_.assign(positions, -1);
  for (int p = 0; p < positions; ++p) {
    const std::vector<std::string>& path = paths[t.order_[p]];
    // The first level where this node's path departs from the previous node's.
    int from = 0;
    if (p > 0) {
      const std::vector<std::string>& prev = paths[t.order_[p - 1]];
      while (from < num_levels && prev[from] == path[from]) ++from;
    }
    for (int l = from; l < num_levels; ++l) {
      LevelData& ld = t.levels_[l];
      ld.name.push_back(path[l]);
      ld.parent.push_back(l == 0 ? -1 : t.num_domains(l - 1) - 1);
      ld.first_pos.push_back(p);
      ld.first_child.push_back(l + 1 < num_levels ? t.num_domains(l + 1) : p);
    }
    t.leaf_of_pos_[p] = t.num_domains(num_levels - 1) - 1;
  }
  for (int l = 0; l < num_levels; ++l) {
    LevelData& ld = t.levels_[l];
    ld.first_pos.push_back(positions);
    ld.first_child.push_back(l + 1 < num_levels ? t.num_domains(l + 1) : positions);
  }
  return t;
}

absl::StatusOr<Topology> Topology::FromLabels(const ClusterState& state, std::vector<Level> levels) {
  if (levels.empty()) return Invalid("topology: no levels");
  std::set<std::string> names, labels;
  for (const Level& l : levels) {
    if (l.name.empty() || l.label.empty())
      return Invalid("topology: a level needs a name and a node label");
    if (!names.insert(l.name).second) return Invalid(absl::StrCat("topology: level ", l.name, " given twice"));
    if (!labels.insert(l.label).second)
      return Invalid(absl::StrCat("topology: label ", l.label, " given for two levels"));
  }
  std::vector<std::vector<std::string>> paths(state.num_nodes());
  for (int i = 0; i < state.num_nodes(); ++i) {
    const Node& node = state.node(i);
    std::vector<std::string> path;
    for (const Level& l : levels) {
      auto it = node.labels.find(l.label);
      if (it == node.labels.end()) {
        path.clear();
        break;
      }
      path.push_back(it->second);
    }
    paths[i] = std::move(path);
  }
  return FromPaths(std::move(levels), paths);
}

absl::StatusOr<Topology> Topology::FromHyperNodes(const ClusterState& state,
                                                  const std::vector<HyperNode>& hyper_nodes) {
  if (hyper_nodes.empty()) return Invalid("topology: no HyperNodes");
  absl::flat_hash_map<std::string, int> by_name;
  for (size_t h = 0; h < hyper_nodes.size(); ++h) {
    const HyperNode& hn = hyper_nodes[h];
    if (hn.name.empty()) return Invalid("topology: a HyperNode without a name");
    if (hn.tier < 1)
      return Invalid(absl::StrCat("topology: HyperNode ", hn.name, " has tier ", hn.tier,
                                  " (tiers start at 1)"));
    if (!by_name.emplace(hn.name, static_cast<int>(h)).second)
      return Invalid(absl::StrCat("topology: HyperNode ", hn.name, " is defined twice"));
  }
  // HyperNode members: each has at most one parent.
  std::vector<int> parent(hyper_nodes.size(), -1);
  for (size_t h = 0; h < hyper_nodes.size(); ++h) {
    for (const HyperNodeMember& m : hyper_nodes[h].members) {
      if (m.kind != HyperNodeMember::Kind::kHyperNode) continue;
      if (m.exact.empty())
        return Invalid(absl::StrCat("topology: HyperNode ", hyper_nodes[h].name,
                                    " selects HyperNode members by exact name only"));
      auto it = by_name.find(m.exact);
      if (it == by_name.end())
        return Invalid(absl::StrCat("topology: HyperNode ", hyper_nodes[h].name,
                                    " names an unknown HyperNode ", m.exact));
      const int c = it->second;
      if (parent[c] >= 0 && parent[c] != static_cast<int>(h))
        return Invalid(absl::StrCat("topology: HyperNode ", m.exact, " is a member of two HyperNodes: ",
                                    hyper_nodes[parent[c]].name, " and ", hyper_nodes[h].name));
      parent[c] = static_cast<int>(h);
    }
  }
  // Cycles, then tiers strictly increasing towards the root.
  for (size_t h = 0; h < hyper_nodes.size(); ++h) {
    std::vector<std::string> chain = {hyper_nodes[h].name};
    absl::flat_hash_set<int> seen = {static_cast<int>(h)};
    for (int p = parent[h]; p >= 0; p = parent[p]) {
      chain.push_back(hyper_nodes[p].name);
      if (!seen.insert(p).second)
        return Invalid(absl::StrCat("topology: HyperNode cycle: ", absl::StrJoin(chain, " -> ")));
    }
  }
  for (size_t h = 0; h < hyper_nodes.size(); ++h)
    if (parent[h] >= 0 && hyper_nodes[parent[h]].tier <= hyper_nodes[h].tier)
      return Invalid(absl::StrCat("topology: HyperNode ", hyper_nodes[h].name, " (tier ",
                                  hyper_nodes[h].tier, ") is a member of ", hyper_nodes[parent[h]].name,
                                  " (tier ", hyper_nodes[parent[h]].tier, "); members need a lower tier"));
  // Node members: each node in at most one HyperNode.
  std::vector<std::vector<std::regex>> patterns(hyper_nodes.size());
  for (size_t h = 0; h < hyper_nodes.size(); ++h)
    for (const HyperNodeMember& m : hyper_nodes[h].members) {
      std::regex r;
      if (m.kind == HyperNodeMember::Kind::kNode && m.exact.empty() && !m.regex.empty()) {
        try {
          r = std::regex(m.regex);
        } catch (const std::regex_error& e) {
          return Invalid(absl::StrCat("topology: HyperNode ", hyper_nodes[h].name,
                                      ": bad regexMatch pattern ", m.regex));
        }
      }
      patterns[h].push_back(std::move(r));
    }
  std::vector<int> owner(state.num_nodes(), -1);
  for (size_t h = 0; h < hyper_nodes.size(); ++h) {
    const auto& members = hyper_nodes[h].members;
    for (size_t k = 0; k < members.size(); ++k) {
      const HyperNodeMember& m = members[k];
      if (m.kind != HyperNodeMember::Kind::kNode) continue;
      const std::regex* pattern = m.exact.empty() && !m.regex.empty() ? &patterns[h][k] : nullptr;
      for (int i = 0; i < state.num_nodes(); ++i) {
        if (!MemberSelectsNode(m, state.node(i), pattern)) continue;
        if (owner[i] >= 0 && owner[i] != static_cast<int>(h))
          return Invalid(absl::StrCat("topology: node ", state.node(i).name,
                                      " is a member of two HyperNodes: ", hyper_nodes[owner[i]].name,
                                      " and ", hyper_nodes[h].name));
        owner[i] = static_cast<int>(h);
      }
    }
  }
  std::set<int, std::greater<int>> tiers;
  for (const HyperNode& hn : hyper_nodes) tiers.insert(hn.tier);
  std::vector<Level> levels;
  for (int t : tiers) levels.push_back(Level{absl::StrCat("tier-", t), ""});
  std::vector<std::vector<std::string>> paths(state.num_nodes());
  for (int i = 0; i < state.num_nodes(); ++i) {
    if (owner[i] < 0) continue;
    std::vector<int> chain;  // narrowest first
    for (int h = owner[i]; h >= 0; h = parent[h]) chain.push_back(h);
    std::vector<std::string> path;
    for (int t : tiers) {
      // The chain's HyperNode of tier t, else the widest one below t (a pass-through domain).
      int pick = -1;
      for (int h : chain)
        if (hyper_nodes[h].tier <= t) pick = h;
      path.push_back(pick >= 0 ? hyper_nodes[pick].name : hyper_nodes[chain.front()].name);
    }
    paths[i] = std::move(path);
  }
  return FromPaths(std::move(levels), paths);
}

int Topology::FindLevel(absl::string_view name) const {
  for (int l = 0; l < num_levels(); ++l)
    if (levels_[l].level.name == name || (!levels_[l].level.label.empty() && levels_[l].level.label == name))
      return l;
  return -1;
}

absl::StatusOr<int> Topology::LevelIndex(absl::string_view name) const {
  const int l = FindLevel(name);
  if (l >= 0) return l;
  std::vector<std::string> known;
  for (const LevelData& ld : levels_) known.push_back(ld.level.name);
  return Invalid(absl::StrCat("unknown topology level ", name, " (levels: ", absl::StrJoin(known, ", "), ")"));
}

std::string Topology::DomainPath(int l, int d) const {
  std::vector<std::string> parts;
  for (int k = l, x = d; k >= 0; x = levels_[k].parent[x], --k) parts.push_back(levels_[k].name[x]);
  std::reverse(parts.begin(), parts.end());
  return absl::StrJoin(parts, "/");
}

int Topology::DomainOf(int l, int node) const {
  if (node < 0 || node >= num_nodes() || position_[node] < 0) return -1;
  int d = leaf_of_pos_[position_[node]];
  for (int k = num_levels() - 1; k > l; --k) d = levels_[k].parent[d];
  return d;
}

}  // namespace gpufleet::topology
