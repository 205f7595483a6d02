// Bindings for what placement answers: FitResult, DeviceGrant, Allocation (Cluster.place wraps
// them in gpufleet.cluster_results.PlaceResult, a named tuple).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <string>

#include "gpufleet/accounting/fit.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/io/annotations.h"
#include "gpufleet/placement/placer.h"
#include "py_cluster_types.h"
#include "py_ints.h"
#include "py_json.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {

void InitAllocation(py::module_& m) {
  py::class_<FitResult>(m, "FitResult",
                         "Whether a pod fits a node: `code` is Ok, Unschedulable (it may fit once pods "
                         "leave) or UnschedulableAndUnresolvable (it never will), with the `reason`. "
                         "True when it fits.")
      .def_property_readonly("code", [](const FitResult& f) { return FitCodeName(f.code); },
                             "Ok, Unschedulable or UnschedulableAndUnresolvable.")
      .def_readonly("reason", &FitResult::reason, "Why the pod does not fit (empty when it does).")
      .def_property_readonly("ok", &FitResult::ok, "True when the pod fits.")
      .def("__bool__", &FitResult::ok)
      .def("__repr__", [](const FitResult& f) {
        return std::string("FitResult(") + FitCodeName(f.code) +
               (f.reason.empty() ? "" : ", " + f.reason) + ")";
      });

  py::class_<VirtualFunction>(m, "VirtualFunction",
                               "One SR-IOV virtual function of an RDMA NIC: its minor and PCI bus id.")
      .def_readonly("minor", &VirtualFunction::minor, "The VF's minor number on its NIC.")
      .def_readonly("bus_id", &VirtualFunction::bus_id, "The VF's PCI bus id, e.g. 0000:1f:00.2.")
      .def("__eq__", [](const VirtualFunction& a, const VirtualFunction& b) { return a == b; })
      .def("__hash__", [](const VirtualFunction& v) {
        return py::hash(py::make_tuple(v.minor, v.bus_id));
      })
      .def("__repr__", [](const VirtualFunction& v) {
        return "VirtualFunction(" + std::to_string(v.minor) + ", " + v.bus_id + ")";
      });

  py::class_<DeviceGrant>(m, "DeviceGrant",
                           "One device given to an allocation: its type and minor number, the compute "
                           "percent (`core`, 100 for a whole GPU) and the memory in bytes it holds.")
      .def_readonly("type", &DeviceGrant::type, "Device type: gpu, rdma or fpga.")
      .def_readonly("minor", &DeviceGrant::minor, "The device minor number on its node.")
      .def_readonly("core", &DeviceGrant::core, "Compute held, in percent of the device (100 = whole).")
      .def_readonly("memory_bytes", &DeviceGrant::memory_bytes, "Device memory held, in bytes.")
      .def_readonly("vfs", &DeviceGrant::vfs,
                    "SR-IOV virtual functions held on an RDMA NIC, a list of VirtualFunction "
                    "(empty for other devices).")
      .def("__repr__", [](const DeviceGrant& g) {
        std::string vfs;
        for (const VirtualFunction& vf : g.vfs) vfs += (vfs.empty() ? ", vfs=" : ",") + vf.bus_id;
        return "DeviceGrant(" + g.type + " " + std::to_string(g.minor) + ", core=" +
               std::to_string(g.core) + ", memory=" + FormatBytes(g.memory_bytes) + vfs + ")";
      });

  py::class_<PyAllocation>(m, "Allocation",
                            "The devices, CPU (millicores) and memory (bytes) a pod holds on a node, "
                            "Reserved (between reserve and commit) or Bound. Renders the pod annotations "
                            "that record it, from which Cluster.restore rebuilds the state.")
      .def_property_readonly("pod", [](const PyAllocation& a) { return a.allocation.pod; }, "The pod key, \"namespace/name\".")
      .def_property_readonly("node", [](const PyAllocation& a) { return a.allocation.node; }, "The node it is on.")
      .def_property_readonly("cpu_milli", [](const PyAllocation& a) { return a.allocation.cpu_milli; },
                             "CPU held, in millicores.")
      .def_property_readonly("memory_bytes",
                             [](const PyAllocation& a) { return a.allocation.memory_bytes; }, "Memory held, in bytes.")
      .def_property_readonly("devices", [](const PyAllocation& a) { return a.allocation.devices; },
                             "The devices held, a list of DeviceGrant.")
      .def_property_readonly("state", [](const PyAllocation& a) {
        return a.allocation.state == AllocationState::kBound ? "Bound" : "Reserved";
      }, "Reserved (bind in flight) or Bound.")
      .def_property_readonly("assume_time_ns",
                             [](const PyAllocation& a) { return a.allocation.assume_time_ns; },
                             "When it was reserved, in nanoseconds since the Unix epoch (gpushare's ASSUME_TIME).")
      .def("annotations",
           [](const PyAllocation& a, bool gpushare, py::handle unit_bytes_arg) {
             const int64_t unit_bytes = IntArg(unit_bytes_arg, "unit_bytes",
                                               std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max());
             Check(CheckUnitBytes(unit_bytes));
             return AllocationAnnotations(a.allocation, a.node, gpushare, unit_bytes);
           },
           py::arg("gpushare") = false, py::arg("unit_bytes") = py::int_(int64_t{1} << 20),
           "Pod annotations recording this allocation (Koordinator's, and gpushare's if asked, "
           "with memory in units of `unit_bytes`; ValueError unless it is positive).")
      .def("device_allocated",
           [](const PyAllocation& a) { return JsonToPy(Json::parse(DeviceAllocatedJson(a.allocation, a.node))); },
           "The Koordinator device-allocated annotation as a dict.")
      .def("__repr__", [](const PyAllocation& a) {
        std::string s = "Allocation(" + a.allocation.pod + " -> " + a.allocation.node;
        for (const auto& g : a.allocation.devices)
          s += ", " + g.type + std::to_string(g.minor) + ":" + std::to_string(g.core) + "%/" +
               FormatBytes(g.memory_bytes);
        return s + ")";
      });

  // Every method takes the cluster's lock with the GIL released (locking.h): readers share it,
  // anything that changes the state or a strategy's memo/generator holds it alone.
}

}  // namespace gpufleet::bindings
