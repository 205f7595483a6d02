// Bindings for the core, accounting, placement and io areas: Pod, Cluster, Allocation.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/io/snapshot.h"
#include "gpufleet/io/spec_json.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

// Strategies are stateless; one instance per spec string is built on first use.
const PlacementStrategy& StrategyFor(const std::string& spec) {
  static auto* cache = new std::map<std::string, std::unique_ptr<PlacementStrategy>>();
  static auto* mu = new std::mutex();
  std::lock_guard<std::mutex> lock(*mu);
  auto it = cache->find(spec);
  if (it == cache->end()) it = cache->emplace(spec, Unwrap(MakeStrategy(spec))).first;
  return *it->second;
}

Pod PodFrom(const py::handle& obj) {
  if (py::isinstance<Pod>(obj)) return obj.cast<Pod>();
  if (py::isinstance<py::dict>(obj))
    return Unwrap(PodFromJson(Json::parse(ToJsonText(obj))));
  throw py::type_error("pod must be a gpufleet.Pod or a dict in the scenario format");
}

int NodeIndex(const ClusterState& s, const std::string& name) {
  int i = s.FindNode(name);
  if (i < 0) throw py::key_error("node " + name + " does not exist");
  return i;
}

// An allocation handed to Python carries a copy of its node so it can render annotations alone.
struct PyAllocation {
  Allocation allocation;
  Node node;
};

PyAllocation Wrap(const ClusterState& s, const Allocation& a) {
  return PyAllocation{a, s.node(s.FindNode(a.node))};
}

py::object Json2Py(const Json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// A NumPy view over a core buffer: the capsule keeps the block alive, the view is read-only.
py::array_t<int64_t> View(const SharedBuffer& buffer) {
  auto* keep = new std::shared_ptr<std::vector<int64_t>>(buffer.storage());
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<std::vector<int64_t>>*>(p); });
  py::array_t<int64_t> arr({static_cast<py::ssize_t>(buffer.size())}, {sizeof(int64_t)},
                           (*keep)->data(), owner);
  py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return arr;
}

}  // namespace

void InitCore(py::module_& m) {
  m.def("parse_quantity", [](const std::string& s) { return Unwrap(ParseQuantity(s)); },
        "Kubernetes quantity -> integer (bytes or count), rounded up like Kubernetes.");
  m.def("parse_milli", [](const std::string& s) { return Unwrap(ParseMilli(s)); },
        "Kubernetes quantity -> milli-units (cpu).");
  m.def("parse_quantity_exact", [](const std::string& s) { return Unwrap(ParseQuantityExact(s)); },
        "Kubernetes quantity -> its exact value as decimal text (\"1.5\", \"0.000000001\").");
  m.def("parse_resource_quantity",
        [](const std::string& resource, const std::string& s) {
          return Unwrap(ParseResourceQuantity(resource, s));
        },
        py::arg("resource"), py::arg("quantity"),
        "A resource's quantity in the core's unit: milli-cores for cpu, whole numbers only for "
        "pods and extended resources (nvidia.com/gpu, koordinator.sh/*, aliyun.com/gpu-mem), "
        "bytes rounded up otherwise.");
  m.def("format_bytes", &FormatBytes);
  m.def("strategies", &StrategyNames, "Names of the registered placement strategies.");
  m.def("strategy_description",
        [](const std::string& n) { return Registry<PlacementStrategy>::Global().Description(n); });
  m.def("registry_duplicates",
        [] { return Registry<PlacementStrategy>::Global().DuplicateNames(); });

  py::class_<DeviceRequest>(m, "DeviceRequest")
      .def_readonly("type", &DeviceRequest::type)
      .def_readonly("count", &DeviceRequest::count)
      .def_readonly("core", &DeviceRequest::core)
      .def_readonly("memory_bytes", &DeviceRequest::memory_bytes)
      .def_readonly("memory_ratio", &DeviceRequest::memory_ratio)
      .def_property_readonly("whole", &DeviceRequest::whole)
      .def("__repr__", [](const DeviceRequest& r) {
        return "DeviceRequest(type=" + r.type + ", count=" + std::to_string(r.count) +
               ", core=" + std::to_string(r.core) + ", memory_bytes=" +
               std::to_string(r.memory_bytes) + ", memory_ratio=" + std::to_string(r.memory_ratio) + ")";
      });

  py::class_<Pod>(m, "Pod")
      .def(py::init([](const std::string& name, py::dict requests, py::object node_selector,
                       py::object tolerations, py::object gpu_models, const std::string& scope,
                       int priority) {
             py::dict spec;
             spec["name"] = name;
             spec["requests"] = requests;
             if (!node_selector.is_none()) spec["node_selector"] = node_selector;
             if (!tolerations.is_none()) spec["tolerations"] = tolerations;
             if (!gpu_models.is_none()) spec["gpu_models"] = gpu_models;
             spec["scope"] = scope;
             spec["priority"] = priority;
             return Unwrap(PodFromJson(Json::parse(ToJsonText(spec))));
           }),
           py::arg("name"), py::arg("requests") = py::dict(), py::arg("node_selector") = py::none(),
           py::arg("tolerations") = py::none(), py::arg("gpu_models") = py::none(),
           py::arg("scope") = "none", py::arg("priority") = 0)
      .def_static("from_dict", [](py::dict d) { return PodFrom(d); })
      .def_readonly("name", &Pod::name)
      .def_readonly("cpu_milli", &Pod::cpu_milli)
      .def_readonly("memory_bytes", &Pod::memory_bytes)
      .def_readonly("devices", &Pod::devices)
      .def_readonly("priority", &Pod::priority)
      .def_readonly("gpu_models", &Pod::gpu_models)
      .def_property_readonly("scope", [](const Pod& p) { return TopologyScopeName(p.scope); })
      .def_property_readonly("gpu_share", &Pod::GpuShare)
      .def("__repr__", [](const Pod& p) { return "Pod(" + p.name + ")"; });

  py::class_<FitResult>(m, "FitResult")
      .def_property_readonly("code", [](const FitResult& f) { return FitCodeName(f.code); })
      .def_readonly("reason", &FitResult::reason)
      .def_property_readonly("ok", &FitResult::ok)
      .def("__bool__", &FitResult::ok)
      .def("__repr__", [](const FitResult& f) {
        return std::string("FitResult(") + FitCodeName(f.code) +
               (f.reason.empty() ? "" : ", " + f.reason) + ")";
      });

  py::class_<DeviceGrant>(m, "DeviceGrant")
      .def_readonly("type", &DeviceGrant::type)
      .def_readonly("minor", &DeviceGrant::minor)
      .def_readonly("core", &DeviceGrant::core)
      .def_readonly("memory_bytes", &DeviceGrant::memory_bytes)
      .def("__repr__", [](const DeviceGrant& g) {
        return "DeviceGrant(" + g.type + " " + std::to_string(g.minor) + ", core=" +
               std::to_string(g.core) + ", memory=" + FormatBytes(g.memory_bytes) + ")";
      });

  py::class_<PyAllocation>(m, "Allocation")
      .def_property_readonly("pod", [](const PyAllocation& a) { return a.allocation.pod; })
      .def_property_readonly("node", [](const PyAllocation& a) { return a.allocation.node; })
      .def_property_readonly("cpu_milli", [](const PyAllocation& a) { return a.allocation.cpu_milli; })
      .def_property_readonly("memory_bytes",
                             [](const PyAllocation& a) { return a.allocation.memory_bytes; })
      .def_property_readonly("devices", [](const PyAllocation& a) { return a.allocation.devices; })
      .def_property_readonly("state", [](const PyAllocation& a) {
        return a.allocation.state == AllocationState::kBound ? "Bound" : "Reserved";
      })
      .def_property_readonly("assume_time_ns",
                             [](const PyAllocation& a) { return a.allocation.assume_time_ns; })
      .def("annotations",
           [](const PyAllocation& a, bool gpushare, int64_t unit_bytes) {
             return AllocationAnnotations(a.allocation, a.node, gpushare, unit_bytes);
           },
           py::arg("gpushare") = false, py::arg("unit_bytes") = int64_t{1} << 20,
           "Pod annotations recording this allocation (Koordinator's, and gpushare's if asked).")
      .def("device_allocated",
           [](const PyAllocation& a) { return Json2Py(Json::parse(DeviceAllocatedJson(a.allocation, a.node))); },
           "The Koordinator device-allocated annotation as a dict.")
      .def("__repr__", [](const PyAllocation& a) {
        std::string s = "Allocation(" + a.allocation.pod + " -> " + a.allocation.node;
        for (const auto& g : a.allocation.devices)
          s += ", " + g.type + std::to_string(g.minor) + ":" + std::to_string(g.core) + "%/" +
               FormatBytes(g.memory_bytes);
        return s + ")";
      });

  py::class_<PlaceResult>(m, "PlaceResult")
      .def_readonly("placed", &PlaceResult::placed)
      .def_readonly("reason", &PlaceResult::reason)
      .def("__bool__", [](const PlaceResult& r) { return r.placed; });

  py::class_<ClusterState>(m, "Cluster")
      .def(py::init<>())
      .def("add_node",
           [](ClusterState& s, py::dict spec) {
             Check(s.AddNode(Unwrap(NodeFromJson(Json::parse(ToJsonText(spec))))));
           },
           py::arg("spec"), "Add a node from a scenario-format dict (see docs/scenario.md).")
      .def("remove_node", [](ClusterState& s, const std::string& n) { Check(s.RemoveNode(n)); })
      .def("set_device_health",
           [](ClusterState& s, const std::string& node, int minor, bool healthy,
              const std::string& type) { Check(s.SetDeviceHealth(node, type, minor, healthy)); },
           py::arg("node"), py::arg("minor"), py::arg("healthy"), py::arg("type") = "gpu")
      .def_property_readonly("num_nodes", &ClusterState::num_nodes)
      .def_property_readonly("num_devices", &ClusterState::num_devices)
      .def("node_names",
           [](const ClusterState& s) {
             std::vector<std::string> out;
             for (int i = 0; i < s.num_nodes(); ++i) out.push_back(s.node(i).name);
             return out;
           })
      .def("has_node", [](const ClusterState& s, const std::string& n) { return s.FindNode(n) >= 0; })
      .def("node", [](const ClusterState& s, const std::string& n) {
        return Json2Py(NodeToJson(s.node(NodeIndex(s, n))));
      }, "The node's spec as a dict.")
      .def("filter",
           [](const ClusterState& s, py::handle pod, const std::string& node) {
             Pod p = PodFrom(pod);
             const Node& n = s.node(NodeIndex(s, node));
             FitResult f = FitsNodeConstraints(p, n);
             return f.ok() ? s.Filter(p, NodeIndex(s, node)) : f;
           },
           py::arg("pod"), py::arg("node"))
      .def("filter_nodes",
           [](const ClusterState& s, py::handle pod, const std::vector<std::string>& nodes) {
             Pod p = PodFrom(pod);
             py::array_t<int8_t> codes(static_cast<py::ssize_t>(nodes.size()));
             std::vector<std::string> reasons(nodes.size());
             auto w = codes.mutable_unchecked<1>();
             {
               py::gil_scoped_release release;
               for (size_t k = 0; k < nodes.size(); ++k) {
                 int i = s.FindNode(nodes[k]);
                 if (i < 0) {
                   w(k) = -1;
                   continue;
                 }
                 FitResult f = FitsNodeConstraints(p, s.node(i));
                 if (f.ok()) f = s.Filter(p, i);
                 w(k) = static_cast<int8_t>(f.code);
                 reasons[k] = std::move(f.reason);
               }
             }
             return py::make_tuple(codes, reasons);
           },
           py::arg("pod"), py::arg("nodes"),
           "Filter many nodes in one native call: (codes, reasons). Codes: 0 Ok, 1 Unschedulable, "
           "2 UnschedulableAndUnresolvable, -1 unknown node.")
      .def("score_nodes",
           [](const ClusterState& s, py::handle pod, const std::vector<std::string>& nodes,
              const std::string& strategy) {
             Pod p = PodFrom(pod);
             const PlacementStrategy& st = StrategyFor(strategy);
             py::array_t<double> out(static_cast<py::ssize_t>(nodes.size()));
             auto w = out.mutable_unchecked<1>();
             {
               py::gil_scoped_release release;
               for (size_t k = 0; k < nodes.size(); ++k) {
                 int i = s.FindNode(nodes[k]);
                 w(k) = i < 0 ? std::numeric_limits<double>::quiet_NaN() : s.Score(p, i, st);
               }
             }
             return out;
           },
           py::arg("pod"), py::arg("nodes"), py::arg("strategy") = "binpack",
           "Scores in [0, 100] for many nodes in one native call; NaN for an unknown node.")
      .def("score",
           [](const ClusterState& s, py::handle pod, const std::string& node,
              const std::string& strategy) {
             return s.Score(PodFrom(pod), NodeIndex(s, node), StrategyFor(strategy));
           },
           py::arg("pod"), py::arg("node"), py::arg("strategy") = "binpack")
      .def("plan",
           [](const ClusterState& s, py::handle pod, const std::string& node,
              const std::string& strategy) -> py::object {
             Allocation a;
             FitResult f = s.Plan(PodFrom(pod), NodeIndex(s, node), StrategyFor(strategy), &a);
             if (!f.ok()) throw py::value_error(f.reason);
             return py::cast(Wrap(s, a));
           },
           py::arg("pod"), py::arg("node"), py::arg("strategy") = "binpack",
           "The devices `strategy` would choose, without changing the state.")
      .def("reserve",
           [](ClusterState& s, py::handle pod, const std::string& node,
              const std::string& strategy) {
             Pod p = PodFrom(pod);
             int i = NodeIndex(s, node);
             FitResult f = FitsNodeConstraints(p, s.node(i));
             Allocation a;
             if (f.ok()) f = s.Plan(p, i, StrategyFor(strategy), &a);
             if (!f.ok()) throw py::value_error("pod " + p.name + " does not fit on " + node + ": " + f.reason);
             Check(s.Reserve(a));
             return Wrap(s, *s.FindAllocation(p.name));
           },
           py::arg("pod"), py::arg("node"), py::arg("strategy") = "binpack")
      .def("unreserve", [](ClusterState& s, const std::string& pod) { Check(s.Unreserve(pod)); })
      .def("commit", [](ClusterState& s, const std::string& pod) { Check(s.Commit(pod)); })
      .def("release", [](ClusterState& s, const std::string& pod) { Check(s.Release(pod)); })
      .def("place",
           [](ClusterState& s, py::handle pod, const std::string& strategy, bool commit,
              py::object nodes) -> py::tuple {
             Pod p = PodFrom(pod);
             std::vector<int> candidates;
             if (!nodes.is_none())
               for (auto n : nodes) candidates.push_back(NodeIndex(s, n.cast<std::string>()));
             PlaceResult r;
             {
               py::gil_scoped_release release;
               r = s.Place(p, StrategyFor(strategy), commit, nodes.is_none() ? nullptr : &candidates);
             }
             if (!r.placed) return py::make_tuple(py::none(), r.reason);
             return py::make_tuple(Wrap(s, r.allocation), "");
           },
           py::arg("pod"), py::arg("strategy") = "binpack", py::arg("commit") = true,
           py::arg("nodes") = py::none(),
           "Filter, score and bind the best node. Returns (Allocation, '') or (None, reason).")
      .def("place_many",
           [](ClusterState& s, const std::vector<Pod>& pods, const std::string& strategy) {
             const PlacementStrategy& st = StrategyFor(strategy);
             py::array_t<int32_t> out(static_cast<py::ssize_t>(pods.size()));
             auto w = out.mutable_unchecked<1>();
             {
               py::gil_scoped_release release;
               for (size_t k = 0; k < pods.size(); ++k) {
                 PlaceResult r = s.Place(pods[k], st, true);
                 w(k) = r.placed ? s.FindNode(r.allocation.node) : -1;
               }
             }
             return out;
           },
           py::arg("pods"), py::arg("strategy") = "binpack",
           "Place pods in order; returns each pod's node index (-1 when it did not fit).")
      .def("allocation",
           [](const ClusterState& s, const std::string& pod) -> py::object {
             const Allocation* a = s.FindAllocation(pod);
             if (a == nullptr) return py::none();
             return py::cast(Wrap(s, *a));
           })
      .def("allocations",
           [](const ClusterState& s) {
             std::vector<PyAllocation> out;
             for (const Allocation* a : s.Allocations()) out.push_back(Wrap(s, *a));
             return out;
           })
      .def("restore_allocation",
           [](ClusterState& s, py::handle pod, const std::string& node,
              const std::map<std::string, std::string>& annotations, int64_t unit_bytes) {
             Pod p = PodFrom(pod);
             return Wrap(s, Unwrap(RestoreBoundPod(s, p, node, annotations, unit_bytes)));
           },
           py::arg("pod"), py::arg("node"), py::arg("annotations"),
           py::arg("unit_bytes") = int64_t{1} << 20,
           "Rebuild a bound pod's allocation from its annotations (after a restart).")
      .def("check_invariants", [](const ClusterState& s) {
        absl::Status st = s.CheckInvariants();
        if (!st.ok()) throw std::runtime_error(std::string(st.message()));
      })
      .def("snapshot", &SaveSnapshot)
      .def_static("restore", [](const std::string& text) { return Unwrap(LoadSnapshot(text)); })
      .def("copy", [](const ClusterState& s) { return ClusterState(s); })
      .def("__eq__", [](const ClusterState& a, const ClusterState& b) { return a == b; })
      .def("device_usage",
           [](const ClusterState& s) {
             const int n = s.num_devices();
             py::array_t<int32_t> node(n), minor(n);
             py::array_t<int64_t> core_cap(n), mem_cap(n);
             py::array_t<bool> healthy(n), is_gpu(n);
             auto wn = node.mutable_unchecked<1>();
             auto wm = minor.mutable_unchecked<1>();
             auto wc = core_cap.mutable_unchecked<1>();
             auto wb = mem_cap.mutable_unchecked<1>();
             auto wh = healthy.mutable_unchecked<1>();
             auto wg = is_gpu.mutable_unchecked<1>();
             for (int i = 0; i < s.num_nodes(); ++i) {
               const Node& nd = s.node(i);
               for (size_t d = 0; d < nd.devices.size(); ++d) {
                 int g = s.first_device(i) + d;
                 wn(g) = i;
                 wm(g) = nd.devices[d].minor;
                 wc(g) = nd.devices[d].core;
                 wb(g) = nd.devices[d].memory_bytes;
                 wh(g) = nd.devices[d].healthy;
                 wg(g) = nd.devices[d].type == kGpu;
               }
             }
             py::dict out;
             out["node"] = node;
             out["minor"] = minor;
             out["is_gpu"] = is_gpu;
             out["healthy"] = healthy;
             out["core_capacity"] = core_cap;
             out["memory_capacity"] = mem_cap;
             out["core_used"] = View(s.used_core());      // zero-copy, read-only
             out["memory_used"] = View(s.used_memory());  // zero-copy, read-only
             return out;
           },
           "Per-device arrays. core_used/memory_used are read-only views of the core's buffers: "
           "they follow later placements until a node is added or removed.");
}

}  // namespace gpufleet::bindings
