// Bindings for the cluster's accounting (Cluster) and its placement strategies.
#include <pybind11/gil_safe_call_once.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/io/snapshot.h"
#include "gpufleet/io/spec_json.h"
#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/placement/node_admission.h"
#include "gpufleet/placement/placer.h"
#include "gpufleet/placement/strategy.h"
#include "locking.h"
#include "py_arrays.h"
#include "py_cluster_types.h"
#include "py_ints.h"
#include "py_json.h"
#include "status_cast.h"

namespace py = pybind11;

// Python objects whose types live in gpufleet/cluster_results.py: the signatures (and so the
// generated stubs) name those types instead of a bare tuple or dict.
namespace gpufleet::bindings {
struct PlaceResultObject : py::object {
  using py::object::object;
};
struct DeviceUsageDict : py::dict {};
struct NodeSpecObject : py::object {
  using py::object::object;
};
}  // namespace gpufleet::bindings

namespace pybind11::detail {
template <>
struct handle_type_name<gpufleet::bindings::PlaceResultObject> {
  static constexpr auto name = const_name("gpufleet.cluster_results.PlaceResult");
};
template <>
struct handle_type_name<gpufleet::bindings::DeviceUsageDict> {
  static constexpr auto name = const_name("gpufleet.cluster_results.DeviceUsage");
};
template <>
struct handle_type_name<gpufleet::bindings::NodeSpecObject> {
  static constexpr auto name = const_name("gpufleet.cluster_results.NodeSpec");
};
}  // namespace pybind11::detail

namespace gpufleet::bindings {
namespace {

constexpr char kCluster[] = "this Cluster";

// The cluster's own instance of a strategy (its memo and generator belong to this cluster).
const PlacementStrategy& StrategyOf(const GuardedCluster& c, const std::string& spec) {
  return *Unwrap(c.Strategy(spec));
}

absl::StatusOr<int> NodeIndex(const ClusterState& s, const std::string& name) {
  int i = s.FindNode(name);
  if (i < 0) return absl::NotFoundError("node " + name + " does not exist");
  return i;
}


// The first `size` values of a block of int64s, as read under the cluster's lock: the block may
// grow in place later (a node added), but what was there at the read stays where it is.
struct Block {
  std::shared_ptr<std::vector<int64_t>> owner;
  const int64_t* data = nullptr;
  size_t size = 0;
};

Block BlockOf(std::shared_ptr<std::vector<int64_t>> owner, size_t size) {
  Block b{std::move(owner), nullptr, size};
  b.data = b.owner->data();
  return b;
}

// A NumPy array over a block; the capsule keeps the block alive. Read-only for a view of the
// core's live buffer, writable for a private copy.
py::array_t<int64_t> View(Block block, bool writable) {
  auto* keep = new std::shared_ptr<std::vector<int64_t>>(std::move(block.owner));
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<std::vector<int64_t>>*>(p); });
  py::array_t<int64_t> arr({static_cast<py::ssize_t>(block.size)}, {sizeof(int64_t)}, block.data, owner);
  if (!writable) py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return arr;
}

// Everything device_usage returns, read under one shared lock (the live blocks' sizes too, so
// every column of one answer has the same length however many nodes are added meanwhile).
struct DeviceUsage {
  std::vector<int32_t> node, minor;
  std::vector<int64_t> core_capacity, memory_capacity;
  std::vector<uint8_t> healthy, is_gpu;
  std::vector<std::string> type, model, node_name;
  Block core_used, memory_used;
};

DeviceUsage ReadDeviceUsage(const ClusterState& s, bool copy) {
  const int n = s.num_devices();
  DeviceUsage u;
  u.node.resize(n);
  u.minor.resize(n);
  u.core_capacity.resize(n);
  u.memory_capacity.resize(n);
  u.healthy.resize(n);
  u.is_gpu.resize(n);
  u.type.resize(n);
  u.model.resize(n);
  u.node_name.resize(n);
  for (int i = 0; i < s.num_nodes(); ++i) {
    const Node& nd = s.node(i);
    for (size_t d = 0; d < nd.devices.size(); ++d) {
      const int g = s.first_device(i) + static_cast<int>(d);
      u.node[g] = i;
      u.node_name[g] = nd.name;
      u.minor[g] = nd.devices[d].minor;
      u.core_capacity[g] = nd.devices[d].core;
      u.memory_capacity[g] = nd.devices[d].memory_bytes;
      u.healthy[g] = nd.devices[d].healthy;
      u.is_gpu[g] = nd.devices[d].type == kGpu;
      u.type[g] = nd.devices[d].type;
      u.model[g] = nd.devices[d].model;
    }
  }
  auto read = [&](const SharedBuffer& used) {
    const std::shared_ptr<std::vector<int64_t>>& live = used.storage();
    if (!copy) return BlockOf(live, n);
    return BlockOf(std::make_shared<std::vector<int64_t>>(live->begin(), live->begin() + n), n);
  };
  u.core_used = read(s.used_core());
  u.memory_used = read(s.used_memory());
  return u;
}

// A node's devices that hold some usage: (type, minor) -> (core used, memory used).
using DeviceUse = std::map<std::pair<std::string, int>, std::pair<int64_t, int64_t>>;

DeviceUse DeviceUseOf(const ClusterState& s, int i) {
  DeviceUse out;
  const std::vector<Device>& devices = s.node(i).devices;
  for (size_t d = 0; d < devices.size(); ++d) {
    const size_t g = static_cast<size_t>(s.first_device(i)) + d;
    const int64_t core = s.used_core()[g], memory = s.used_memory()[g];
    if (core > 0 || memory > 0) out[{devices[d].type, devices[d].minor}] = {core, memory};
  }
  return out;
}

// usage_changes' versions: the change log's id above bit 64, the position in it below, so that
// a version from another log (a copy, or before a node was removed) never matches the current
// one, and versions only grow (log ids do).
constexpr int kPositionBits = 64;

// The nodes changed since `since` (names; nullopt: read everything) and the version now.
struct UsageChanges {
  uint64_t log_id = 0, position = 0;
  std::optional<std::vector<std::string>> nodes;
};

// What plan and place answer, read under the cluster's lock.
struct Planned {
  FitResult fit;
  std::optional<PyAllocation> allocation;
};

// place's answer: a gpufleet.cluster_results.PlaceResult (a NamedTuple; why, in that module).
// Made as its generated __new__ makes it, tuple.__new__(PlaceResult, (allocation, reason)), without
// the Python call in between (a third of the cost, on a path that takes a few microseconds).
PlaceResultObject MakePlaceResult(std::optional<PyAllocation> allocation, const std::string& reason) {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> place_result_type;
  const py::object& cls = place_result_type.call_once_and_store_result([] {
    return py::module_::import("gpufleet.cluster_results").attr("PlaceResult");
  }).get_stored();
  py::object alloc = allocation ? py::cast(std::move(*allocation)) : py::none();
  py::tuple args = py::make_tuple(py::make_tuple(std::move(alloc), reason));
  PyObject* out = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(cls.ptr()), args.ptr(), nullptr);
  if (out == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<PlaceResultObject>(out);
}

}  // namespace

void InitCluster(py::module_& m) {
  py::class_<GuardedCluster>(m, "Cluster",
                              "The cluster's accounting: nodes, their devices and the allocations that "
                              "hold them. Filter, score and place pods; reserve, commit, release; snapshot "
                              "and restore. Safe to call from many threads: readers share a lock, changes "
                              "hold it alone, and no change ever over-commits a device.")
      .def(py::init<>())
      .def("add_node",
           [](GuardedCluster& c, py::dict spec) {
             Node node = Unwrap(NodeFromJson(PyToJson(spec)));
             Check(Writing(c, kCluster, [&](ClusterState& s) { return s.AddNode(node); }));
           },
           py::arg("spec"), "Add a node from a scenario-format dict (see docs/scenario.md).")
      .def("remove_node",
           [](GuardedCluster& c, const std::string& n) {
             Check(Writing(c, kCluster, [&](ClusterState& s) { return s.RemoveNode(n); }));
           },
           py::arg("name"), "Remove a node; KeyError if absent, ValueError while pods hold it.")
      .def("set_device_health",
           [](GuardedCluster& c, const std::string& node, py::handle minor_arg, bool healthy,
              const std::string& type) {
             const int minor = static_cast<int>(
                 IntArg(minor_arg, "minor", std::numeric_limits<int>::min(),
                        std::numeric_limits<int>::max()));
             Check(Writing(c, kCluster, [&](ClusterState& s) {
               return s.SetDeviceHealth(node, type, minor, healthy);
             }));
           },
           py::arg("node"), py::arg("minor"), py::arg("healthy"), py::arg("type") = "gpu",
           "Mark one device (by node, type and minor) healthy or not; an unhealthy device takes "
           "no new pods, and pods already on it keep their allocation. KeyError for an unknown "
           "node or device.")
      .def_property_readonly("num_nodes",
                             [](const GuardedCluster& c) {
                               return Reading(c, kCluster, [](const ClusterState& s) { return s.num_nodes(); });
                             }, "How many nodes the cluster has.")
      .def_property_readonly("num_devices",
                             [](const GuardedCluster& c) {
                               return Reading(c, kCluster, [](const ClusterState& s) { return s.num_devices(); });
                             }, "How many devices (GPUs, RDMA NICs, FPGAs) all nodes have together.")
      .def("node_names",
           [](const GuardedCluster& c) {
             return Reading(c, kCluster, [](const ClusterState& s) {
               std::vector<std::string> out;
               for (int i = 0; i < s.num_nodes(); ++i) out.push_back(s.node(i).name);
               return out;
             });
           },
           "The node names, in the order they were added.")
      .def("has_node",
           [](const GuardedCluster& c, const std::string& n) {
             return Reading(c, kCluster, [&](const ClusterState& s) { return s.FindNode(n) >= 0; });
           },
           py::arg("name"), "Whether a node of that name exists.")
      .def("node",
           [](const GuardedCluster& c, const std::string& n) {
             Json j = Unwrap(Reading(c, kCluster, [&](const ClusterState& s) -> absl::StatusOr<Json> {
               ASSIGN_OR_RETURN(int i, NodeIndex(s, n));
               return NodeToJson(s.node(i));
             }));
             return py::reinterpret_steal<NodeSpecObject>(JsonToPy(j).release());
           },
           py::arg("name"), "The node's spec as a dict (a NodeSpec); KeyError if absent.")
      .def("filter",
           [](const GuardedCluster& c, py::handle pod, const std::string& node) {
             Pod p = PodFrom(pod);
             return Unwrap(Reading(c, kCluster, [&](const ClusterState& s) -> absl::StatusOr<FitResult> {
               ASSIGN_OR_RETURN(int i, NodeIndex(s, node));
               return AdmitNode(s, p, i);
             }));
           },
           py::arg("pod"), py::arg("node"),
           "Whether the pod fits the node now (selector, taints, CPU, memory, pod count and each "
           "device): a FitResult with the reason when it does not. KeyError for an unknown node.")
      .def("filter_nodes",
           [](const GuardedCluster& c, py::handle pod, const std::vector<std::string>& nodes) {
             Pod p = PodFrom(pod);
             std::vector<int8_t> codes(nodes.size());
             std::vector<std::string> reasons(nodes.size());
             Reading(c, kCluster, [&](const ClusterState& s) {
               for (size_t k = 0; k < nodes.size(); ++k) {
                 int i = s.FindNode(nodes[k]);
                 if (i < 0) {
                   codes[k] = -1;
                   continue;
                 }
                 FitResult f = AdmitNode(s, p, i);
                 codes[k] = static_cast<int8_t>(f.code);
                 reasons[k] = std::move(f.reason);
               }
               return 0;
             });
             return py::make_tuple(ToArray<int8_t>(codes), reasons);
           },
           py::arg("pod"), py::arg("nodes"),
           "Filter many nodes in one native call: (codes, reasons). Codes: 0 Ok, 1 Unschedulable, "
           "2 UnschedulableAndUnresolvable, -1 unknown node.")
      .def("score_nodes",
           [](const GuardedCluster& c, py::handle pod, const std::vector<std::string>& nodes,
              const std::string& strategy) {
             Pod p = PodFrom(pod);
             const PlacementStrategy& st = StrategyOf(c, strategy);
             std::vector<double> scores = Asking(c, st, kCluster, [&](const ClusterState& s) {
               std::vector<double> out(nodes.size());
               for (size_t k = 0; k < nodes.size(); ++k) {
                 int i = s.FindNode(nodes[k]);
                 out[k] = i < 0 ? std::numeric_limits<double>::quiet_NaN() : ScoreOnNode(s, p, i, st);
               }
               return out;
             });
             return ToArray<double>(scores);
           },
           py::arg("pod"), py::arg("nodes"), py::arg("strategy") = "binpack",
           "Scores in [0, 100] for many nodes in one native call; NaN for an unknown node.")
      .def("score",
           [](const GuardedCluster& c, py::handle pod, const std::string& node,
              const std::string& strategy) {
             Pod p = PodFrom(pod);
             const PlacementStrategy& st = StrategyOf(c, strategy);
             return Unwrap(Asking(c, st, kCluster, [&](const ClusterState& s) -> absl::StatusOr<double> {
               ASSIGN_OR_RETURN(int i, NodeIndex(s, node));
               return ScoreOnNode(s, p, i, st);
             }));
           },
           py::arg("pod"), py::arg("node"), py::arg("strategy") = "binpack",
           "The strategy's score for placing the pod on the node, in [0, 100] (higher is better). "
           "KeyError for an unknown node or strategy.")
      .def("plan",
           [](const GuardedCluster& c, py::handle pod, const std::string& node,
              const std::string& strategy) {
             Pod p = PodFrom(pod);
             const PlacementStrategy& st = StrategyOf(c, strategy);
             Planned r = Unwrap(Asking(c, st, kCluster, [&](const ClusterState& s) -> absl::StatusOr<Planned> {
               ASSIGN_OR_RETURN(int i, NodeIndex(s, node));
               // The node as named: its capacity and devices, not its labels or taints.
               const Placement planned = PlanOnNode(s, p, i, st, Admission::kCapacityOnly);
               Planned out;
               if (planned.ok()) out.allocation = Wrap(s, planned.allocation);
               else out.fit = FitResult::Unschedulable(planned.reason);
               return out;
             }));
             if (!r.fit.ok()) throw InvalidInput(r.fit.reason);
             return *r.allocation;
           },
           py::arg("pod"), py::arg("node"), py::arg("strategy") = "binpack",
           "The devices `strategy` would choose, without changing the state.")
      .def("reserve",
           [](GuardedCluster& c, py::handle pod, const std::string& node,
              const std::string& strategy) {
             Pod p = PodFrom(pod);
             const PlacementStrategy& st = StrategyOf(c, strategy);
             return Unwrap(Writing(c, kCluster, [&](ClusterState& s) -> absl::StatusOr<PyAllocation> {
               ASSIGN_OR_RETURN(int i, NodeIndex(s, node));
               const Placement planned = PlanOnNode(s, p, i, st);
               if (!planned.ok())
                 return absl::InvalidArgumentError("pod " + p.name + " does not fit on " + node +
                                                   ": " + planned.reason);
               RETURN_IF_ERROR(s.Reserve(planned.allocation));
               return Wrap(s, *s.FindAllocation(p.name));
             }));
           },
           py::arg("pod"), py::arg("node"), py::arg("strategy") = "binpack",
           "Hold the devices, CPU and memory the strategy picks on the node for the pod (state "
           "Reserved) and return the Allocation; commit() binds it, unreserve() gives it back. "
           "ValueError when the pod does not fit or already holds an allocation, KeyError for an "
           "unknown node; the state is unchanged on error.")
      .def("unreserve",
           [](GuardedCluster& c, const std::string& pod) {
             Check(Writing(c, kCluster, [&](ClusterState& s) { return s.Unreserve(pod); }));
           },
           py::arg("pod"), "Drop a reserved (not yet bound) allocation; a no-op if there is none.")
      .def("commit",
           [](GuardedCluster& c, const std::string& pod) {
             Check(Writing(c, kCluster, [&](ClusterState& s) { return s.Commit(pod); }));
           },
           py::arg("pod"), "Reserved -> bound; KeyError if the pod holds no allocation.")
      .def("release",
           [](GuardedCluster& c, const std::string& pod) {
             Check(Writing(c, kCluster, [&](ClusterState& s) { return s.Release(pod); }));
           },
           py::arg("pod"), "Free a reserved or bound allocation; KeyError if there is none.")
      .def("place",
           [](GuardedCluster& c, py::handle pod, const std::string& strategy, bool commit,
              py::object nodes) -> PlaceResultObject {
             Pod p = PodFrom(pod);
             std::optional<std::vector<std::string>> names;
             if (!nodes.is_none()) {
               names.emplace();
               for (auto n : nodes) names->push_back(n.cast<std::string>());
             }
             const PlacementStrategy& st = StrategyOf(c, strategy);
             Planned r = Unwrap(Writing(c, kCluster, [&](ClusterState& s) -> absl::StatusOr<Planned> {
               std::vector<int> candidates;
               if (names) {
                 ASSIGN_OR_RETURN(candidates, NodeIndices(s, *names));
               }
               const Placement placed = c.placer().Place(
                   s, {.pod = p, .strategy = st, .candidates = names ? &candidates : nullptr},
                   commit);
               Planned out;
               if (placed.ok()) out.allocation = Wrap(s, placed.allocation);
               else out.fit = FitResult::Unschedulable(placed.reason);
               return out;
             }));
             return MakePlaceResult(std::move(r.allocation), r.fit.reason);
           },
           py::arg("pod"), py::arg("strategy") = "binpack", py::arg("commit") = true,
           py::arg("nodes") = py::none(),
           "Filter, score and bind the best node (`nodes`: only these, ties to the earlier one). "
           "Returns a PlaceResult(allocation, reason), a named tuple: (Allocation, '') or (None, "
           "reason).")
      .def("place_many",
           [](GuardedCluster& c, const std::vector<Pod>& pods, const std::string& strategy) {
             std::vector<int> nodes =
                 Unwrap(Without(c, kCluster, [&] { return c.PlaceMany(pods, strategy); }));
             return ToArray<int32_t>(nodes);
           },
           py::arg("pods"), py::arg("strategy") = "binpack",
           "Place pods in order, as one call that no other call on this cluster interleaves; "
           "returns each pod's node index (-1 when it did not fit).")
      .def("allocation",
           [](const GuardedCluster& c, const std::string& pod) {
             return Reading(c, kCluster, [&](const ClusterState& s) -> std::optional<PyAllocation> {
               const Allocation* found = s.FindAllocation(pod);
               if (found == nullptr) return std::nullopt;
               return Wrap(s, *found);
             });
           },
           py::arg("pod"), "The pod's Allocation, or None.")
      .def("allocations",
           [](const GuardedCluster& c) {
             return Reading(c, kCluster, [](const ClusterState& s) {
               std::vector<PyAllocation> out;
               for (const Allocation* a : s.Allocations()) out.push_back(Wrap(s, *a));
               return out;
             });
           },
           "Every allocation held (Reserved and Bound), as a list of Allocation.")
      .def("restore_allocation",
           [](GuardedCluster& c, py::handle pod, const std::string& node,
              const std::map<std::string, std::string>& annotations, py::handle unit_bytes_arg) {
             const int64_t unit_bytes = IntArg(unit_bytes_arg, "unit_bytes",
                                               std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max());
             Check(CheckUnitBytes(unit_bytes));
             Pod p = PodFrom(pod);
             return Unwrap(Writing(c, kCluster, [&](ClusterState& s) -> absl::StatusOr<PyAllocation> {
               ASSIGN_OR_RETURN(Allocation a, RestoreBoundPod(s, p, node, annotations, unit_bytes));
               return Wrap(s, a);
             }));
           },
           py::arg("pod"), py::arg("node"), py::arg("annotations"),
           py::arg("unit_bytes") = py::int_(int64_t{1} << 20),
           "Rebuild a bound pod's allocation from its annotations (after a restart); gpushare's "
           "memory counts in units of `unit_bytes` (ValueError unless it is positive).")
      .def("check_invariants",
           [](const GuardedCluster& c) {
             absl::Status st = Reading(c, kCluster, [](const ClusterState& s) { return s.CheckInvariants(); });
             if (!st.ok()) throw CoreError(absl::StatusCode::kInternal, std::string(st.message()));
           },
           "Check that every device's usage equals the sum of the allocations on it and stays "
           "within its capacity; RuntimeError naming the first broken rule.")
      .def("snapshot",
           [](const GuardedCluster& c) {
             return Reading(c, kCluster, [](const ClusterState& s) { return SaveSnapshot(s); });
           },
           "The state as JSON text, taken at one instant (no call on this cluster interleaves).")
      .def_static("restore",
                  [](const std::string& text) {
                    absl::StatusOr<ClusterState> s;
                    {
                      py::gil_scoped_release nogil;
                      s = LoadSnapshot(text);
                    }
                    return GuardedCluster(Unwrap(std::move(s)));
                  },
                  py::arg("snapshot"),
                  "A cluster from snapshot() text; ValueError names what is wrong in it.")
      .def("copy",
           [](const GuardedCluster& c) { return Without(c, kCluster, [&] { return c.Copy(); }); },
           "A deep copy with its own lock and its own strategies (fresh memos, generators from "
           "their seeds).")
      .def("__eq__",
           [](const GuardedCluster& a, const GuardedCluster& b) {
             RefuseReentry(b.lock(), kCluster);
             return Without(a, kCluster, [&] { return a.Equals(b); });
           },
           py::arg("other"))
      .def("usage_changes",
           [](const GuardedCluster& c, const py::int_& since) {
             if (PyBool_Check(since.ptr())) throw py::type_error("since: expected an int, got bool");
             if (since < py::int_(0))
               throw InvalidInput("since: " + py::str(since).cast<std::string>() +
                                  " is not a version (versions are >= 0)");
             const py::int_ high = since >> py::int_(kPositionBits);
             const py::int_ low = since & py::int_(std::numeric_limits<uint64_t>::max());
             // Ids start at 1: a high part past 64 bits (never a version) matches no log.
             const uint64_t since_id =
                 high > py::int_(std::numeric_limits<uint64_t>::max()) ? 0 : high.cast<uint64_t>();
             const uint64_t since_position = low.cast<uint64_t>();
             UsageChanges out = Reading(c, kCluster, [&](const ClusterState& s) {
               UsageChanges r{s.changes().id(), s.changes().end(), std::nullopt};
               std::optional<std::vector<int>> nodes = s.NodesChangedSince(since_id, since_position);
               if (nodes) {
                 r.nodes.emplace();
                 r.nodes->reserve(nodes->size());
                 for (int i : *nodes) r.nodes->push_back(s.node(i).name);
               }
               return r;
             });
             py::int_ version = (py::int_(out.log_id) << py::int_(kPositionBits)) | py::int_(out.position);
             return std::make_pair(std::move(version), std::move(out.nodes));
           },
           py::arg("since"),
           "What changed since version `since` (0 the first time): (version, nodes). `version` "
           "is the state now, to pass next time; `nodes` names each node whose usage, health "
           "or allocations changed since `since` (added nodes too), once, in the order of its "
           "first change, or is None when that is not known any more (a version from another "
           "cluster or copy, one from before a node was removed, or one so old that the record "
           "was trimmed): then read every node. Versions only grow; reads leave them as they "
           "are. A change made after this call reaches the next call's answer.")
      .def("node_device_use",
           [](const GuardedCluster& c, const std::vector<std::string>& nodes) {
             return Reading(c, kCluster, [&](const ClusterState& s) {
               std::vector<std::optional<DeviceUse>> out(nodes.size());
               for (size_t k = 0; k < nodes.size(); ++k) {
                 const int i = s.FindNode(nodes[k]);
                 if (i >= 0) out[k] = DeviceUseOf(s, i);
               }
               return out;
             });
           },
           py::arg("nodes"),
           "Per named node, read at one instant: its devices that hold some usage, as (type, "
           "minor) -> (core used, memory used) (what device_usage() gives for those rows), or "
           "None for a node that does not exist.")
      .def("device_usage",
           [](const GuardedCluster& c, bool copy) {
             DeviceUsage u = Reading(c, kCluster, [&](const ClusterState& s) { return ReadDeviceUsage(s, copy); });
             DeviceUsageDict out;
             out["node"] = ToArray<int32_t>(u.node);
             out["node_name"] = py::cast(u.node_name);
             out["minor"] = ToArray<int32_t>(u.minor);
             out["is_gpu"] = ToArray<bool>(u.is_gpu);
             out["type"] = py::cast(u.type);
             out["model"] = py::cast(u.model);
             out["healthy"] = ToArray<bool>(u.healthy);
             out["core_capacity"] = ToArray<int64_t>(u.core_capacity);
             out["memory_capacity"] = ToArray<int64_t>(u.memory_capacity);
             out["core_used"] = View(std::move(u.core_used), copy);
             out["memory_used"] = View(std::move(u.memory_used), copy);
             return out;
           },
           py::arg("copy") = false,
           "One row per device, as equal-length columns that pd.DataFrame takes as they are: "
           "node (index in node_names() order), node_name, minor, is_gpu, type, model, healthy, "
           "core/memory capacity and core/memory used, read at one instant (a node without "
           "devices has no row). With copy=False, core_used/memory_used are "
           "read-only zero-copy views of the core's live buffers: they follow later placements "
           "(not a consistent snapshot while other threads place) until a node is added or "
           "removed. copy=True returns private copies taken with the metadata under one lock.");
}

}  // namespace gpufleet::bindings
