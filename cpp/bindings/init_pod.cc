// Bindings for a pod and what it asks of devices: Pod, DeviceRequest.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "gpufleet/core/pod.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/io/spec_json.h"
#include "py_cluster_types.h"
#include "py_json.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {

void InitPod(py::module_& m) {
  py::class_<DeviceRequest>(m, "DeviceRequest",
                             "What a pod asks of one device type: `count` devices (whole when `whole`), or a "
                             "share of one: `core` percent of its compute, `memory_bytes` or `memory_ratio` "
                             "percent of its memory. Read from Pod.devices.")
      .def_readonly("type", &DeviceRequest::type, "Device type: gpu, rdma or fpga.")
      .def_readonly("count", &DeviceRequest::count, "How many devices of this type.")
      .def_readonly("core", &DeviceRequest::core, "Compute per device in percent (100 = a whole GPU).")
      .def_readonly("memory_bytes", &DeviceRequest::memory_bytes, "Device memory per device in bytes (0 when asked as a ratio).")
      .def_readonly("memory_ratio", &DeviceRequest::memory_ratio, "Device memory per device in percent of its capacity.")
      .def_property_readonly("whole", &DeviceRequest::whole, "Whether whole devices are asked (no sharing).")
      .def("__repr__", [](const DeviceRequest& r) {
        return "DeviceRequest(type=" + r.type + ", count=" + std::to_string(r.count) +
               ", core=" + std::to_string(r.core) + ", memory_bytes=" +
               std::to_string(r.memory_bytes) + ", memory_ratio=" + std::to_string(r.memory_ratio) + ")";
      });

  py::class_<Pod>(m, "Pod",
                   "A pod to place: its name (\"namespace/name\"), its requests as Kubernetes quantities "
                   "(cpu, memory, nvidia.com/gpu, koordinator.sh/gpu-core, gpu-memory, gpu-memory-ratio, "
                   "aliyun.com/gpu-mem, rdma, fpga), node selector, tolerations, allowed GPU models, "
                   "topology scope and priority. Instead of requests, `containers`, `init_containers` "
                   "(an entry with restart_policy Always is a sidecar) and `overhead` give its "
                   "effective request as Kubernetes computes it (see effective_requests). The "
                   "constructor raises ValueError naming a malformed quantity or an invalid "
                   "combination.")
      .def(py::init([](const std::string& name, py::dict requests, py::object node_selector,
                       py::object tolerations, py::object gpu_models, const std::string& scope,
                       py::object priority, py::object containers, py::object init_containers,
                       py::object overhead) {
             py::dict spec;
             spec["name"] = name;
             if (!requests.empty()) spec["requests"] = requests;
             if (!containers.is_none()) spec["containers"] = containers;
             if (!init_containers.is_none()) spec["init_containers"] = init_containers;
             if (!overhead.is_none()) spec["overhead"] = overhead;
             if (!node_selector.is_none()) spec["node_selector"] = node_selector;
             if (!tolerations.is_none()) spec["tolerations"] = tolerations;
             if (!gpu_models.is_none()) spec["gpu_models"] = gpu_models;
             spec["scope"] = scope;
             spec["priority"] = priority;
             return Unwrap(PodFromJson(PyToJson(spec)));
           }),
           py::arg("name"), py::arg("requests") = py::dict(), py::arg("node_selector") = py::none(),
           py::arg("tolerations") = py::none(), py::arg("gpu_models") = py::none(),
           py::arg("scope") = "none", py::arg("priority") = py::int_(0), py::kw_only(),
           py::arg("containers") = py::none(), py::arg("init_containers") = py::none(),
           py::arg("overhead") = py::none())
      .def_static("from_dict", [](py::dict d) { return PodFrom(d); }, py::arg("spec"),
                  "A pod from a scenario-format dict; ValueError names a bad field.")
      .def_readonly("name", &Pod::name, "The pod key, \"namespace/name\".")
      .def_readonly("cpu_milli", &Pod::cpu_milli, "CPU request in millicores.")
      .def_readonly("memory_bytes", &Pod::memory_bytes, "Memory request in bytes.")
      .def_readonly("devices", &Pod::devices, "Device requests, a list of DeviceRequest (one per device type).")
      .def_readonly("priority", &Pod::priority, "Scheduling priority; higher may preempt lower.")
      .def_readonly("gpu_models", &Pod::gpu_models, "GPU models the pod accepts (empty: any).")
      .def_property_readonly("scope", [](const Pod& p) { return TopologyScopeName(p.scope); },
                             "Topology scope the devices must share: none, pcie, numa or node.")
      .def_property_readonly("gpu_share", &Pod::GpuShare, "Whether the pod asks for a share of one GPU rather than whole GPUs.")
      .def("__repr__", [](const Pod& p) { return "Pod(" + p.name + ")"; });

  m.def("effective_requests",
        [](py::dict spec, const std::string& where) {
          ResourceQuantities r = Unwrap(PodRequestsFromJson(PyToJson(spec), where));
          std::map<std::string, std::string> out;
          for (const auto& [name, q] : r) out[name] = Quantity::Exact(q.nanos).text;
          return out;
        },
        py::arg("spec"), py::arg("where") = "pod",
        "A pod's effective request as Kubernetes computes it, {resource: exact quantity text}: "
        "from `spec`'s containers ([{name, requests, limits}], a missing request defaulting to "
        "the limit), init_containers (restart_policy Always: a sidecar) and overhead, the larger "
        "of what initialization needs (each init container beside the sidecars started before "
        "it) and what runs after it (regular containers and sidecars), plus the overhead; from "
        "its requests when it lists no containers. Each quantity is read once, exactly; zero "
        "amounts are left out. ValueError names `where` and the field.");
}

}  // namespace gpufleet::bindings
