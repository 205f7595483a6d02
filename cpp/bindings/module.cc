// The extension module gpufleet._core: one init function per area, each in its own file.
#include <pybind11/pybind11.h>

namespace gpufleet::bindings {
void InitQuantity(pybind11::module_& m);
void InitPod(pybind11::module_& m);
void InitAllocation(pybind11::module_& m);
void InitCluster(pybind11::module_& m);
void InitEngine(pybind11::module_& m);
void InitSim(pybind11::module_& m);
void InitReplay(pybind11::module_& m);
void InitRegistry(pybind11::module_& m);
void InitQueues(pybind11::module_& m);
void InitTopology(pybind11::module_& m);
void InitDra(pybind11::module_& m);
}  // namespace gpufleet::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "gpufleet native core";
  gpufleet::bindings::InitQuantity(m);
  gpufleet::bindings::InitPod(m);
  gpufleet::bindings::InitAllocation(m);
  gpufleet::bindings::InitCluster(m);
  gpufleet::bindings::InitEngine(m);
  gpufleet::bindings::InitSim(m);
  gpufleet::bindings::InitReplay(m);
  gpufleet::bindings::InitRegistry(m);
  gpufleet::bindings::InitQueues(m);
  gpufleet::bindings::InitTopology(m);
  gpufleet::bindings::InitDra(m);
}
