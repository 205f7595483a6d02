// One table per bound result type: each field is declared once (name, help, how to read it), and
// the table gives the class its read-only properties, `to_dict()` (the fields in table order,
// nested results as their own to_dict()) and `fields` (the keys to_dict() holds, in order). A
// property computed from the fields (BindDecision.gpus from its devices) is marked derived: it
// is listed in `derived` (a tuple, as `fields` is) and left out of to_dict(). The simulator's
// columns work the same way (init_sim.cc).
#ifndef GPUFLEET_BINDINGS_PY_FIELDS_H_
#define GPUFLEET_BINDINGS_PY_FIELDS_H_

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace gpufleet::bindings {

enum class FieldKind { kStored, kDerived };

template <typename T>
struct Field {
  const char* name;
  const char* doc;
  // The property's value; `self` is the Python object, the owner of views into `value`.
  pybind11::object (*get)(const T& value, pybind11::handle self);
  FieldKind kind = FieldKind::kStored;
  // to_dict()'s value when it is not the property's plain data (see Plain).
  pybind11::object (*plain)(const T& value) = nullptr;
};

// How a table entry reads its value: a copy (numbers, strings, dicts of them), or a view into its
// owner (bound results, lists of them) that keeps the owner alive.
template <typename V>
pybind11::object FieldCopy(const V& value) {
  return pybind11::cast(value);
}
template <typename V>
pybind11::object FieldView(const V& value, pybind11::handle owner) {
  return pybind11::cast(value, pybind11::return_value_policy::reference_internal, owner);
}

// Plain data for JSON/YAML: a bound result becomes its to_dict(), a list element-wise.
inline pybind11::object Plain(pybind11::handle value) {
  if (pybind11::isinstance<pybind11::list>(value)) {
    pybind11::list out;
    for (pybind11::handle item : value) out.append(Plain(item));
    return out;
  }
  if (pybind11::hasattr(value, "to_dict")) return value.attr("to_dict")();
  return pybind11::reinterpret_borrow<pybind11::object>(value);
}

template <typename T, typename... Extra, size_t N>
void BindFields(pybind11::class_<T, Extra...>& cls, const Field<T> (&table)[N]) {
  namespace py = pybind11;
  std::vector<std::string> stored, derived;
  std::string listed;
  for (const Field<T>& f : table) {
    auto get = f.get;
    cls.def_property_readonly(
        f.name, [get](py::object self) { return get(self.cast<const T&>(), self); }, f.doc);
    if (f.kind == FieldKind::kDerived) {
      derived.push_back(f.name);
      continue;
    }
    stored.push_back(f.name);
    listed += (listed.empty() ? "" : ", ") + std::string(f.name);
  }
  cls.def(
      "to_dict",
      [&table](py::object self) {
        const T& value = self.cast<const T&>();
        py::dict d;
        for (const Field<T>& f : table) {
          if (f.kind == FieldKind::kDerived) continue;
          d[f.name] = f.plain != nullptr ? f.plain(value) : Plain(f.get(value, self));
        }
        return d;
      },
      ("Plain data for JSON/YAML, one key per field: " + listed + ".").c_str());
  // Plain class attributes: constant tuples of names (a static property would lose its help).
  cls.attr("fields") = py::tuple(py::cast(stored));
  cls.attr("derived") = py::tuple(py::cast(derived));
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_FIELDS_H_
