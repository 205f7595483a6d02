// The extension module gpufleet._core: one init function per area, each in its own file.
#include <pybind11/pybind11.h>

namespace gpufleet::bindings {
void InitCore(pybind11::module_& m);
void InitEngine(pybind11::module_& m);
void InitSim(pybind11::module_& m);
void InitReplay(pybind11::module_& m);
void InitRegistry(pybind11::module_& m);
}  // namespace gpufleet::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "gpufleet native core";
  gpufleet::bindings::InitCore(m);
  gpufleet::bindings::InitEngine(m);
  gpufleet::bindings::InitSim(m);
  gpufleet::bindings::InitReplay(m);
  gpufleet::bindings::InitRegistry(m);
}
