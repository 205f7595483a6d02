// Python values <-> nlohmann::json, walked directly (no JSON text in between): dicts, lists and
// tuples, str, int, float, bool and None, as json.dumps/json.loads map them. What JSON cannot
// say (NaN, infinities, integers past 64 bits, other types) is an error naming the problem and
// where in the value it is, and nesting is bounded like every other outside text.
#ifndef GPUFLEET_BINDINGS_PY_JSON_H_
#define GPUFLEET_BINDINGS_PY_JSON_H_

#include <pybind11/pybind11.h>

#include <cmath>
#include <string>

#include "nlohmann/json.hpp"
#include "status_cast.h"

namespace gpufleet::bindings {

inline constexpr int kMaxPyJsonDepth = 64;  // the same bound as core/json_text.h

namespace py_json_detail {

inline std::string Where(const std::string& path) { return path.empty() ? "the value" : path; }

inline nlohmann::json Convert(const pybind11::handle& obj, const std::string& path, int depth) {
  namespace py = pybind11;
  if (depth > kMaxPyJsonDepth)
    throw InvalidInput(Where(path) + ": nested deeper than " +
                          std::to_string(kMaxPyJsonDepth) + " levels");
  if (obj.is_none()) return nullptr;
  if (PyBool_Check(obj.ptr())) return obj.ptr() == Py_True;
  if (PyLong_Check(obj.ptr()) || (!PyFloat_Check(obj.ptr()) && PyIndex_Check(obj.ptr()))) {
    // Integers (and integer-like values such as NumPy's) keep their exact value.
    py::int_ value = py::reinterpret_steal<py::int_>(PyNumber_Index(obj.ptr()));
    if (!value) throw py::error_already_set();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) return static_cast<int64_t>(v);
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
      if (!PyErr_Occurred()) return static_cast<uint64_t>(u);
      PyErr_Clear();
    }
    throw InvalidInput(Where(path) + ": integer " + py::str(obj).cast<std::string>() +
                          " is out of the 64-bit range");
  }
  if (PyFloat_Check(obj.ptr())) {
    double d = PyFloat_AsDouble(obj.ptr());
    if (!std::isfinite(d))
      throw InvalidInput(Where(path) + ": not representable as JSON: " +
                            py::repr(obj).cast<std::string>() +
                            " (NaN and infinity are not valid numbers here)");
    return d;
  }
  if (PyUnicode_Check(obj.ptr())) return obj.cast<std::string>();
  if (PyDict_Check(obj.ptr())) {
    nlohmann::json out = nlohmann::json::object();
    for (auto item : py::reinterpret_borrow<py::dict>(obj)) {
      std::string key;
      if (PyUnicode_Check(item.first.ptr())) {
        key = item.first.cast<std::string>();
      } else if (PyLong_Check(item.first.ptr()) || PyFloat_Check(item.first.ptr()) ||
                 item.first.is_none()) {
        key = Convert(item.first, path, depth + 1).dump();  // json.dumps turns these into text
      } else {
        throw py::type_error(Where(path) + ": keys must be strings, not " +
                             std::string(Py_TYPE(item.first.ptr())->tp_name));
      }
      out[key] = Convert(item.second, path.empty() ? key : path + "." + key, depth + 1);
    }
    return out;
  }
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    nlohmann::json out = nlohmann::json::array();
    size_t i = 0;
    for (auto item : obj) {
      out.push_back(Convert(item, path + "[" + std::to_string(i) + "]", depth + 1));
      ++i;
    }
    return out;
  }
  throw py::type_error(Where(path) + ": a " + std::string(Py_TYPE(obj.ptr())->tp_name) +
                       " is not a JSON value (use dict, list, str, int, float, bool or None)");
}

}  // namespace py_json_detail

// A Python value as JSON. ValueError for NaN, infinities, out-of-range integers and too deep
// nesting; TypeError for values JSON has no form for. The error names the path ("devices[1].type").
inline nlohmann::json PyToJson(const pybind11::handle& obj) {
  return py_json_detail::Convert(obj, "", 0);
}

// JSON as Python values: objects as dicts (in order), arrays as lists.
inline pybind11::object JsonToPy(const nlohmann::json& j) {
  namespace py = pybind11;
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& v : j) out.append(JsonToPy(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [k, v] : j.items()) out[py::str(k)] = JsonToPy(v);
      return out;
    }
    default:
      return py::none();  // binary and discarded values never come out of the core
  }
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_JSON_H_
