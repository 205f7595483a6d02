// NumPy columns built from native vectors, shared by the bindings that return tables (one row per
// node, device or pod). The array owns a copy, so it stays valid whatever happens to the vector.
#ifndef GPUFLEET_BINDINGS_PY_ARRAYS_H_
#define GPUFLEET_BINDINGS_PY_ARRAYS_H_

#include <pybind11/numpy.h>

#include <type_traits>
#include <vector>

namespace gpufleet::bindings {

// A 1-D array of `T` holding `v`'s values; `T` defaults to the vector's own element type, so
// `ToArray(v)` keeps the type and `ToArray<int8_t>(codes)` narrows it.
template <typename T = void, typename V>
pybind11::array_t<std::conditional_t<std::is_void_v<T>, V, T>> ToArray(const std::vector<V>& v) {
  using Out = std::conditional_t<std::is_void_v<T>, V, T>;
  pybind11::array_t<Out> a(static_cast<pybind11::ssize_t>(v.size()));
  auto w = a.template mutable_unchecked<1>();
  for (size_t i = 0; i < v.size(); ++i) w(static_cast<pybind11::ssize_t>(i)) = static_cast<Out>(v[i]);
  return a;
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_ARRAYS_H_
