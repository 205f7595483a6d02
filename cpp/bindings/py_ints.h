// Whole-number arguments read with their range. A parameter declared `int` refuses a Python int
// past its C range with pybind11's multi-line list of signatures; read through IntArg, such a
// value is a one-line ValueError naming the argument and the range.
#ifndef GPUFLEET_BINDINGS_PY_INTS_H_
#define GPUFLEET_BINDINGS_PY_INTS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "status_cast.h"

namespace gpufleet::bindings {

// `value` as an integer from `low` to `high`: TypeError for what is not a whole number (a bool,
// a float, a list), ValueError for one out of range.
inline int64_t IntArg(pybind11::handle value, const char* name, int64_t low, int64_t high) {
  namespace py = pybind11;
  if (PyBool_Check(value.ptr()) || PyFloat_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
    throw py::type_error(std::string(name) + ": expected a whole number, got " +
                         Py_TYPE(value.ptr())->tp_name);
  py::int_ number = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!number) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  if (overflow != 0 || v < low || v > high) {
    std::string shown = py::str(number).cast<std::string>();
    if (shown.size() > 24) shown = shown.substr(0, 21) + "...";
    throw InvalidInput(std::string(name) + ": " + shown + " is out of range: " +
                          std::to_string(low) + " to " + std::to_string(high));
  }
  return v;
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_INTS_H_
