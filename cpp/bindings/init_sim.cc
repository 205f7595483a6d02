// Python bindings for the sim area (filled in with that area).
#include <pybind11/pybind11.h>

namespace gpufleet::bindings {
void InitSim(pybind11::module_& m) { (void)m; }
}  // namespace gpufleet::bindings
