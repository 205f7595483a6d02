// The extension module gpufleet._core: one submodule per area (gpufleet._core.cluster, .engine,
// ...), each filled by the init functions of its files. Every public name of a submodule is also
// an attribute of gpufleet._core itself, so `from gpufleet._core import Cluster` keeps working.
#include <pybind11/pybind11.h>

#include <string>

#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
void InitQuantity(py::module_& m);
void InitPod(py::module_& m);
void InitAllocation(py::module_& m);
void InitCluster(py::module_& m);
void InitExtender(py::module_& m);
void InitEngine(py::module_& m);
void InitSim(py::module_& m);
void InitReplay(py::module_& m);
void InitRegistry(py::module_& m);
void InitQueues(py::module_& m);
void InitTopology(py::module_& m);
void InitDra(py::module_& m);

namespace {

struct Area {
  const char* name;
  const char* doc;
  void (*inits[3])(py::module_&);
};

const Area kAreas[] = {
    {"quantity", "Kubernetes quantities, the wire keys and the MIG geometry the core defines once.",
     {InitQuantity}},
    {"cluster", "The cluster's accounting: pods, allocations and the Cluster that places them.",
     {InitPod, InitAllocation, InitCluster}},
    {"extender", "The kube-scheduler extender protocol's filter and prioritize over a Cluster.",
     {InitExtender}},
    {"engine", "The batch-scheduling engine and its bound results.", {InitEngine}},
    {"sim", "The job-time simulator.", {InitSim}},
    {"replay", "The openb GPU-sharing replay.", {InitReplay}},
    {"registry", "What the registries hold and declare.", {InitRegistry}},
    {"queues", "Queue trees: objects, fair shares, the multi-tenant simulation.", {InitQueues}},
    {"topology", "Gangs placed by network topology.", {InitTopology}},
    {"dra", "Kubernetes Dynamic Resource Allocation: the native search and its scores.", {InitDra}},
};

}  // namespace
}  // namespace gpufleet::bindings

PYBIND11_MODULE(_core, m) {
  using gpufleet::bindings::kAreas;
  m.doc() = "gpufleet native core";
  gpufleet::bindings::InitErrors();
  py::object modules = py::module_::import("sys").attr("modules");
  for (const auto& area : kAreas) {
    py::module_ sub = m.def_submodule(area.name, area.doc);
    for (auto init : area.inits)
      if (init != nullptr) init(sub);
    // `import gpufleet._core.cluster` finds it too.
    modules[py::str(std::string("gpufleet._core.") + area.name)] = sub;
    for (auto item : sub.attr("__dict__").cast<py::dict>()) {
      const std::string name = item.first.cast<std::string>();
      if (name.rfind("__", 0) == 0) continue;
      if (py::hasattr(m, name.c_str()))
        throw std::runtime_error("gpufleet._core: two areas define " + name);
      m.attr(name.c_str()) = item.second;
    }
  }
}
