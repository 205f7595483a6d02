// Clusters of racks for the topology tests: GPU nodes labelled with their block, rack and host,
// pods of a number of whole GPUs, and fillers that take GPUs on chosen nodes.
#ifndef GPUFLEET_TESTS_CPP_TOPOLOGY_TEST_UTIL_H_
#define GPUFLEET_TESTS_CPP_TOPOLOGY_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpufleet/topology/gang_placer.h"
#include "gpufleet/topology/topology.h"
#include "test_util.h"

namespace gpufleet::test {

inline constexpr char kBlockLabel[] = "cloud.provider.com/topology-block";
inline constexpr char kRackLabel[] = "cloud.provider.com/topology-rack";

inline Node GpuNode(const std::string& name, int gpus,
                    const std::map<std::string, std::string>& labels, int cpu = 64) {
  Node n = MakeNode(absl::StrFormat(
      R"({"name":"%s","cpu":"%d","memory":"512Gi","pods":"110","gpus":{"count":%d,"model":"H100","memory":"80Gi"}})",
      name, cpu, gpus));
  n.labels = labels;
  return n;
}

// blocks x racks x nodes, named "b<i>-r<j>-n<k>"; racks are called "r<j>" in every block (Kueue's
// rack names need not be unique across blocks).
inline ClusterState RackCluster(int blocks, int racks, int nodes, int gpus) {
  ClusterState s;
  for (int b = 0; b < blocks; ++b)
    for (int r = 0; r < racks; ++r)
      for (int n = 0; n < nodes; ++n) {
        const std::string name = absl::StrFormat("b%d-r%d-n%d", b, r, n);
        EXPECT_OK(s.AddNode(GpuNode(name, gpus,
                                    {{kBlockLabel, absl::StrCat("b", b)},
                                     {kRackLabel, absl::StrCat("r", r)},
                                     {topology::kHostnameLabel, name}})));
      }
  return s;
}

inline std::vector<topology::Level> BlockRackHost() {
  return {{"block", kBlockLabel}, {"rack", kRackLabel}, {"host", topology::kHostnameLabel}};
}

inline Pod GpuPod(int gpus, int cpu = 1) {
  return MakePod(absl::StrFormat(R"({"name":"p","requests":{"nvidia.com/gpu":"%d","cpu":"%d"}})",
                                 gpus, cpu));
}

// Takes `gpus` whole GPUs on node `name` (one pod per GPU, bound).
inline void Occupy(ClusterState& s, const std::string& name, int gpus) {
  static int serial = 0;
  auto binpack = StrategyOrDie("binpack");
  const int n = s.FindNode(name);
  ASSERT_GE(n, 0) << name;
  for (int k = 0; k < gpus; ++k) {
    Pod p = GpuPod(1);
    p.name = absl::StrCat("filler-", serial++);
    Placement plan = PlanOnNode(s, p, n, *binpack);
    ASSERT_TRUE(plan.ok()) << plan.reason;
    ASSERT_OK(s.Reserve(plan.allocation));
    ASSERT_OK(s.Commit(p.name));
  }
}

inline topology::GroupRequest Group(const std::string& name, int gpus, int count,
                                    topology::Constraint c = {}) {
  topology::GroupRequest g;
  g.name = name;
  g.pod = GpuPod(gpus);
  g.count = count;
  g.constraint = std::move(c);
  return g;
}

inline topology::GangRequest Gang(std::vector<topology::GroupRequest> groups,
                                  topology::Constraint c = {},
                                  topology::Fit fit = topology::Fit::kBestFit) {
  topology::GangRequest g;
  g.name = "g";
  g.groups = std::move(groups);
  g.constraint = std::move(c);
  g.fit = fit;
  return g;
}

// "node:pods" for every node of every group, in placement order, e.g. "b0-r1-n0:2 b0-r1-n1:1".
inline std::string Layout(const ClusterState& s, const topology::GangPlacement& p) {
  std::vector<std::string> parts;
  for (const auto& g : p.groups)
    for (const auto& [node, count] : g.nodes) parts.push_back(absl::StrCat(s.node(node).name, ":", count));
  return absl::StrJoin(parts, " ");
}

// Pods of the placement per domain of level l, by domain path.
inline std::map<std::string, int> PodsPerDomain(const topology::Topology& t,
                                                const topology::GangPlacement& p, int l) {
  std::map<std::string, int> out;
  for (const auto& g : p.groups)
    for (const auto& [node, count] : g.nodes) out[t.DomainPath(l, t.DomainOf(l, node))] += count;
  return out;
}

}  // namespace gpufleet::test

#endif  // GPUFLEET_TESTS_CPP_TOPOLOGY_TEST_UTIL_H_
