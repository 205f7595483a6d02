// Python bindings for the engine area (filled in with that area).
#include <pybind11/pybind11.h>

namespace gpufleet::bindings {
void InitEngine(pybind11::module_& m) { (void)m; }
}  // namespace gpufleet::bindings
