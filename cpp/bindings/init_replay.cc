// Python bindings for the replay area (filled in with that area).
#include <pybind11/pybind11.h>

namespace gpufleet::bindings {
void InitReplay(pybind11::module_& m) { (void)m; }
}  // namespace gpufleet::bindings
