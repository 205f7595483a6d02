// gpufleet._core.extender: the kube-scheduler extender protocol's filter and prioritize over a
// Cluster, each one native call for all the nodes of a request, answering in the protocol's
// shapes (node names grouped by verdict; [{"Host", "Score"}]). The HTTP service
// (gpufleet.k8s.extender) calls these; the Cluster itself knows nothing of the protocol.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"
#include "locking.h"
#include "py_cluster_types.h"
#include "py_ints.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

constexpr char kAskedCluster[] = "this Cluster";

// The node names of one call: a tuple of the caller's list items taken with the GIL held (the
// tuple holds a reference to each string, so another thread replacing or clearing list items
// cannot free one), and views of their UTF-8 text, valid while the tuple lives. The views are
// read without the GIL; Python strings never change, and no per-name copy is made: the extender
// hands thousands of names per request. Answers name the nodes with the tuple's own objects.
struct NodeNames {
  py::tuple items;
  std::vector<absl::string_view> views;

  py::handle item(size_t k) const {
    return PyTuple_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(k));
  }
};

NodeNames NodeNamesOf(const py::list& nodes) {
  NodeNames out;
  out.items = py::reinterpret_steal<py::tuple>(PySequence_Tuple(nodes.ptr()));
  if (!out.items) throw py::error_already_set();
  out.views.reserve(out.items.size());
  for (size_t k = 0; k < out.items.size(); ++k) {
    PyObject* o = out.item(k).ptr();
    Py_ssize_t n = 0;
    const char* data = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : nullptr;
    if (data == nullptr) {
      PyErr_Clear();
      throw py::type_error("nodes[" + std::to_string(k) + "]: expected a node name (a string), got " +
                           std::string(Py_TYPE(o)->tp_name));
    }
    out.views.emplace_back(data, static_cast<size_t>(n));
  }
  return out;
}

py::tuple PartitionNodes(const GuardedCluster& c, py::handle pod, const py::list& nodes) {
  Pod p = PodFrom(pod);
  const NodeNames names = NodeNamesOf(nodes);
  const size_t count = names.views.size();
  std::vector<FitResult> fits(count);
  std::vector<int8_t> known(count, 1);
  Reading(c, kAskedCluster, [&](const ClusterState& s) {
    for (size_t k = 0; k < count; ++k) {
      int i = s.FindNode(names.views[k]);
      if (i < 0) {
        known[k] = 0;
        continue;
      }
      fits[k] = AdmitNode(s, p, i);
    }
    return 0;
  });
  // The caller's own name objects go back out: no per-node string is made.
  py::list passed, unknown;
  py::dict failed, unresolvable;
  for (size_t k = 0; k < count; ++k) {
    py::handle name = names.item(k);
    if (!known[k]) {
      unknown.append(name);
    } else if (fits[k].ok()) {
      passed.append(name);
    } else {
      py::dict& into = fits[k].code == FitCode::kUnschedulableAndUnresolvable ? unresolvable : failed;
      into[name] = py::str(fits[k].reason);
    }
  }
  return py::make_tuple(passed, failed, unresolvable, unknown);
}

py::list HostPriorities(const GuardedCluster& c, py::handle pod, const py::list& nodes,
                        const std::string& strategy, py::handle max_priority_arg) {
  const int max_priority = static_cast<int>(
      IntArg(max_priority_arg, "max_priority", 1, std::numeric_limits<int>::max()));
  Pod p = PodFrom(pod);
  const NodeNames names = NodeNamesOf(nodes);
  const size_t count = names.views.size();
  const PlacementStrategy& st = *Unwrap(c.Strategy(strategy));  // the cluster's own instance
  std::vector<int> scaled = Asking(c, st, kAskedCluster, [&](const ClusterState& s) {
    std::vector<int> out(count, 0);
    for (size_t k = 0; k < count; ++k) {
      int i = s.FindNode(names.views[k]);
      if (i < 0) continue;  // unknown: the lowest priority
      // 0..100 to 0..max, rounding half to even as the protocol's reference does.
      double v = std::nearbyint(ScoreOnNode(s, p, i, st) * max_priority / 100.0);
      out[k] = v != v ? 0 : static_cast<int>(std::clamp(v, 0.0, double(max_priority)));
    }
    return out;
  });
  py::list out(count);
  py::str host("Host"), score("Score");
  for (size_t k = 0; k < count; ++k) {
    py::dict d;
    d[host] = names.item(k);
    d[score] = py::int_(scaled[k]);
    out[k] = std::move(d);
  }
  return out;
}

}  // namespace

void InitExtender(py::module_& m) {
  m.def("partition_nodes", &PartitionNodes, py::arg("cluster"), py::arg("pod"), py::arg("nodes"),
        "The extender's filter in one native call: (passed, failed, unresolvable, unknown).\n\n"
        "`nodes` is a list of node names, read once when the call starts (another thread may "
        "change the list meanwhile). `passed` lists the nodes that fit, in the given order; "
        "`failed` maps a node that does not fit now to the reason (preemption may help); "
        "`unresolvable` maps a node that can never fit to the reason; `unknown` lists names "
        "the cluster does not have. Raises TypeError naming the first entry that is not a "
        "string.");
  m.def("host_priorities", &HostPriorities, py::arg("cluster"), py::arg("pod"), py::arg("nodes"),
        py::arg("strategy") = "binpack", py::arg("max_priority") = py::int_(10),
        "The extender's prioritize in one native call: [{'Host': name, 'Score': s}] with s the "
        "node's score scaled from [0, 100] to [0, max_priority] (rounded half to even); 0 for "
        "a node the cluster does not have. Raises TypeError for an entry that is not a "
        "string, ValueError for an unknown strategy or a max_priority outside 1 to 2^31-1.");
}

}  // namespace gpufleet::bindings
