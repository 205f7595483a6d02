// Bindings for gang placement across topology levels: place_gang on a Cluster, and
// topology_domains for a look at the domains a topology makes of a cluster's nodes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/placement/node_plan.h"
#include "gpufleet/topology/gang_placer.h"
#include "gpufleet/topology/topology_json.h"
#include "locking.h"
#include "py_json.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using topology::GangPlacement;
using topology::GangRequest;
using topology::Topology;

constexpr char kCluster[] = "this Cluster";

// {"levels": [...]}, {"hyper_nodes": [...]}, or a Kueue/KAI Topology object.
struct TopologySpec {
  std::vector<topology::Level> levels;
  std::vector<topology::HyperNode> hyper_nodes;
  bool by_hyper_nodes = false;
};

TopologySpec SpecFrom(const py::handle& obj) {
  const Json j = PyToJson(obj);
  TopologySpec spec;
  if (j.is_object() && j.contains("hyper_nodes")) {
    spec.hyper_nodes = Unwrap(topology::HyperNodesFromJson(j["hyper_nodes"]));
    spec.by_hyper_nodes = true;
  } else if (j.is_object() && j.contains("levels")) {
    spec.levels = Unwrap(topology::LevelsFromJson(j["levels"]));
  } else {
    spec.levels = Unwrap(topology::LevelsFromJson(j));
  }
  return spec;
}

absl::StatusOr<Topology> Build(const ClusterState& s, const TopologySpec& spec) {
  return spec.by_hyper_nodes ? Topology::FromHyperNodes(s, spec.hyper_nodes)
                             : Topology::FromLabels(s, spec.levels);
}

struct PlacedPod {
  std::string pod, node;
  std::vector<std::string> devices;
};

struct Answer {
  GangPlacement placement;
  std::string level, domain;
  std::vector<std::string> group_level, group_domain;
  std::vector<std::vector<std::pair<std::string, int>>> nodes;
  std::vector<std::vector<PlacedPod>> pods;
};

// Names and paths while the state is at hand (under the lock).
void Describe(const ClusterState& s, const Topology& t, Answer* a) {
  const GangPlacement& p = a->placement;
  if (p.level >= 0) {
    a->level = t.level(p.level).name;
    a->domain = t.DomainPath(p.level, p.domain);
  }
  for (const auto& g : p.groups) {
    a->group_level.push_back(g.level >= 0 ? t.level(g.level).name : "");
    a->group_domain.push_back(g.level >= 0 ? t.DomainPath(g.level, g.domain) : "");
    std::vector<std::pair<std::string, int>> nodes;
    for (const auto& [n, k] : g.nodes) nodes.emplace_back(s.node(n).name, k);
    a->nodes.push_back(std::move(nodes));
  }
}

// Plans every pod on its node and applies the plans, all or none.
absl::Status Apply(ClusterState& s, const GangRequest& request, const PlacementStrategy& strategy,
                   Answer* a) {
  std::vector<std::string> applied;
  auto undo = [&] {
    for (const std::string& pod : applied) (void)s.Release(pod);
  };
  for (size_t g = 0; g < request.groups.size(); ++g) {
    std::vector<PlacedPod> pods;
    Pod pod = request.groups[g].pod;
    int index = 0;
    for (int node : a->placement.groups[g].PodNodes()) {
      pod.name = absl::StrCat(request.name.empty() ? "gang" : request.name, "-",
                              request.groups[g].name, "-", index++);
      Placement plan = PlanOnNode(s, pod, node, strategy);
      absl::Status st = plan.ok() ? s.Reserve(plan.allocation)
                                  : absl::FailedPreconditionError(plan.reason);
      if (st.ok()) st = s.Commit(pod.name);
      if (!st.ok()) {
        undo();
        return absl::FailedPreconditionError(
            absl::StrCat("pod ", pod.name, " on ", s.node(node).name, ": ", st.message()));
      }
      applied.push_back(pod.name);
      PlacedPod placed{pod.name, s.node(node).name, {}};
      for (const DeviceGrant& d : plan.allocation.devices)
        placed.devices.push_back(absl::StrCat(d.type, d.minor));
      pods.push_back(std::move(placed));
    }
    a->pods.push_back(std::move(pods));
  }
  return absl::OkStatus();
}

py::dict ToDict(const Answer& a, const GangRequest& request) {
  py::dict out;
  out["placed"] = a.placement.ok();
  out["reason"] = a.placement.reason;
  out["level"] = a.level.empty() ? py::object(py::none()) : py::object(py::str(a.level));
  out["domain"] = a.domain.empty() ? py::object(py::none()) : py::object(py::str(a.domain));
  py::list groups;
  for (size_t g = 0; g < a.nodes.size(); ++g) {
    py::dict d;
    d["name"] = request.groups[g].name;
    d["level"] = a.group_level[g].empty() ? py::object(py::none()) : py::object(py::str(a.group_level[g]));
    d["domain"] = a.group_domain[g].empty() ? py::object(py::none()) : py::object(py::str(a.group_domain[g]));
    py::list nodes;
    for (const auto& [n, k] : a.nodes[g]) nodes.append(py::make_tuple(n, k));
    d["nodes"] = nodes;
    if (g < a.pods.size()) {
      py::list pods;
      for (const PlacedPod& p : a.pods[g]) {
        py::dict pd;
        pd["pod"] = p.pod;
        pd["node"] = p.node;
        pd["devices"] = p.devices;
        pods.append(pd);
      }
      d["pods"] = pods;
    }
    groups.append(d);
  }
  out["groups"] = groups;
  return out;
}

}  // namespace

void InitTopology(py::module_& m) {
  m.def(
      "place_gang",
      [](GuardedCluster& c, py::handle topology_spec, py::handle gang, const std::string& strategy,
         bool commit) -> py::dict {
        const TopologySpec spec = SpecFrom(topology_spec);
        const GangRequest request = Unwrap(topology::GangRequestFromJson(PyToJson(gang)));
        const PlacementStrategy& st = *Unwrap(c.Strategy(strategy));
        auto choose = [&](const ClusterState& s) -> absl::StatusOr<Answer> {
          ASSIGN_OR_RETURN(Topology t, Build(s, spec));
          Answer a;
          topology::GangPlacer placer;
          ASSIGN_OR_RETURN(a.placement, placer.Choose(s, t, request, st));
          Describe(s, t, &a);
          return a;
        };
        Answer a;
        if (!commit) {
          a = Unwrap(Reading(c, kCluster, choose));
        } else {
          a = Unwrap(Writing(c, kCluster, [&](ClusterState& s) -> absl::StatusOr<Answer> {
            ASSIGN_OR_RETURN(Answer chosen, choose(s));
            if (chosen.placement.ok()) {
              absl::Status applied = Apply(s, request, st, &chosen);
              if (!applied.ok()) {
                chosen.placement.reason = std::string(applied.message());
                chosen.pods.clear();
              }
            }
            return chosen;
          }));
        }
        return ToDict(a, request);
      },
      py::arg("cluster"), py::arg("topology"), py::arg("gang"), py::arg("strategy") = "binpack",
      py::arg("commit") = false,
      "Where a gang goes across topology levels: {'placed', 'reason', 'level', 'domain', 'groups': "
      "[{'name', 'level', 'domain', 'nodes': [(node, pods)], 'pods' (with commit)}]}. With commit, "
      "every pod is planned on its node and bound, all or none.");
  m.def(
      "topology_domains",
      [](const GuardedCluster& c, py::handle topology_spec) -> py::dict {
        const TopologySpec spec = SpecFrom(topology_spec);
        struct Table {
          std::vector<std::string> level, domain, node;
          std::vector<std::string> outside;
        };
        Table t = Unwrap(Reading(c, kCluster, [&](const ClusterState& s) -> absl::StatusOr<Table> {
          ASSIGN_OR_RETURN(Topology topo, Build(s, spec));
          Table out;
          for (int n : topo.order())
            for (int l = 0; l < topo.num_levels(); ++l) {
              out.level.push_back(topo.level(l).name);
              out.domain.push_back(topo.DomainPath(l, topo.DomainOf(l, n)));
              out.node.push_back(s.node(n).name);
            }
          for (int n : topo.outside()) out.outside.push_back(s.node(n).name);
          return out;
        }));
        py::dict out;
        out["level"] = t.level;
        out["domain"] = t.domain;
        out["node"] = t.node;
        out["outside"] = t.outside;
        return out;
      },
      py::arg("cluster"), py::arg("topology"),
      "Each node's domain on every level (columns level, domain, node) and the nodes outside.");
}

}  // namespace gpufleet::bindings
