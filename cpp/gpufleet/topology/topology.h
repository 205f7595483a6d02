// The network topology above the nodes: an ordered list of levels (widest first, e.g. block,
// rack, host) whose domains nest. A domain is named by its path of label values, so two racks
// may both be called "r1" under different blocks (Kueue's convention). Built from node labels
// (Kueue's Topology and KAI's Topology: one node label per level) or from Volcano's HyperNodes
// (tiers; members by name, name pattern or labels). A multi-node NVLink domain is a level like any
// other: NVIDIA's GPU feature discovery labels every node of one NVLink fabric (a GB200 NVL72
// rack) with the same `nvidia.com/gpu.clique` value, "<cluster UUID>.<clique id>", so a level on
// that label groups the nodes that share one fabric (kNvlinkCliqueLabel).
//
// Nodes without a label of some level are outside the topology: a gang with a topology
// constraint never lands there (Kueue and KAI leave such nodes to pods without one), and
// outside() lists them. A Topology is bound to the ClusterState it was built from (node indices);
// hosts build a new one when nodes come or go. It is immutable, so any thread may read it.
#ifndef GPUFLEET_TOPOLOGY_TOPOLOGY_H_
#define GPUFLEET_TOPOLOGY_TOPOLOGY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpufleet/accounting/cluster_state.h"

namespace gpufleet::topology {

inline constexpr const char* kNvlinkCliqueLabel = "nvidia.com/gpu.clique";
inline constexpr const char* kHostnameLabel = "kubernetes.io/hostname";

struct Level {
  std::string name;   // how gangs name it ("rack"); unique
  std::string label;  // the node label whose value names the domain
};

// Volcano's HyperNode, as its spec reads: a tier (1 is the narrowest) and members, each a node or
// a HyperNode, chosen by exact name, a name pattern (regular expression, nodes only) or labels
// (nodes only).
struct HyperNodeMember {
  enum class Kind { kNode, kHyperNode };
  Kind kind = Kind::kNode;
  std::string exact;                         // exactMatch.name
  std::string regex;                         // regexMatch.pattern
  std::map<std::string, std::string> labels;  // labelMatch.matchLabels
};
struct HyperNode {
  std::string name;
  int tier = 1;
  std::vector<HyperNodeMember> members;
};

class Topology {
 public:
  Topology() = default;

  // Levels from node labels, widest first. Errors: no levels, a level name or label given twice.
  static absl::StatusOr<Topology> FromLabels(const ClusterState& state, std::vector<Level> levels);
  // Levels from HyperNodes: one level per tier present, the highest tier first, named "tier-<t>".
  // A HyperNode that skips a tier gets a pass-through domain of the same name there. Errors (one
  // line, naming the objects): a HyperNode named twice, a member naming an unknown HyperNode or
  // one of an equal or higher tier, a cycle, a node or HyperNode that is a member of two
  // HyperNodes, a tier below 1, a regular expression that does not compile.
  static absl::StatusOr<Topology> FromHyperNodes(const ClusterState& state,
                                                 const std::vector<HyperNode>& hyper_nodes);

  int num_levels() const { return static_cast<int>(levels_.size()); }
  const Level& level(int l) const { return levels_[l].level; }
  // The level's index, or -1.
  int FindLevel(absl::string_view name) const;
  // The level's index, or an InvalidArgument naming the known levels.
  absl::StatusOr<int> LevelIndex(absl::string_view name) const;

  int num_domains(int l) const { return static_cast<int>(levels_[l].name.size()); }
  // The domain's path of values joined by '/', e.g. "b1/r2".
  std::string DomainPath(int l, int d) const;
  const std::string& domain_name(int l, int d) const { return levels_[l].name[d]; }
  int parent(int l, int d) const { return levels_[l].parent[d]; }  // at l-1; -1 on level 0
  // Children of domain d are the domains [first_child, end_child) of level l+1; on the last level,
  // nodes. Every domain covers the contiguous positions [first_pos, end_pos) of order().
  int first_child(int l, int d) const { return levels_[l].first_child[d]; }
  int end_child(int l, int d) const { return levels_[l].first_child[d + 1]; }
  int first_pos(int l, int d) const { return levels_[l].first_pos[d]; }
  int end_pos(int l, int d) const { return levels_[l].first_pos[d + 1]; }

  // Nodes in the topology, domain by domain (every domain's nodes are contiguous).
  const std::vector<int>& order() const { return order_; }
  // Nodes without a label of some level (or in no HyperNode of every tier).
  const std::vector<int>& outside() const { return outside_; }
  // The domain of `node` at level l, or -1 when the node is outside.
  int DomainOf(int l, int node) const;
  // The position of `node` in order(), or -1.
  int PositionOf(int node) const { return position_[node]; }
  int num_nodes() const { return static_cast<int>(position_.size()); }

 private:
  struct LevelData {
    Level level;
    std::vector<std::string> name;
    std::vector<int> parent;
    std::vector<int> first_child;  // size num_domains + 1
    std::vector<int> first_pos;    // size num_domains + 1
  };
  // Builds the levels from each node's path of domain names (nodes with an empty path are
  // outside), grouping equal prefixes.
  static Topology FromPaths(std::vector<Level> levels,
                            const std::vector<std::vector<std::string>>& paths);

  std::vector<LevelData> levels_;
  std::vector<int> order_, outside_, position_;
  std::vector<int> leaf_of_pos_;  // per position: its domain on the last level
};

}  // namespace gpufleet::topology

#endif  // GPUFLEET_TOPOLOGY_TOPOLOGY_H_
