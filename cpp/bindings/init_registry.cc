// What every registry declares about its registrants, as plain Python data for listings (the
// CLI's --list-* options, notebooks, docs): one list of dicts per registry.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // capabilities: std::vector<std::string> to a list

#include "gpufleet/core/registry.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/policies/job_time_policy.h"
#include "py_json.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

py::dict RegistrationDict(const Registration& r) {
  py::list params;
  for (const ParamSpec& p : r.params) {
    py::dict d;
    d["name"] = p.name;
    d["type"] = ParamTypeName(p.type);
    d["default"] = JsonToPy(p.default_value);
    d["help"] = p.help;
    d["example"] = JsonToPy(p.example);
    params.append(d);
  }
  py::dict out;
  out["name"] = r.name;
  out["description"] = r.description;
  out["parameters"] = params;
  out["capabilities"] = py::cast(r.capabilities);
  out["open_parameters"] = r.open_params;
  return out;
}

template <typename T>
py::list Listing() {
  std::vector<Registration> infos;
  {
    py::gil_scoped_release release;  // the registry's lock is never taken with the GIL held
    infos = Registry<T>::Global().Infos();
  }
  py::list out;
  for (const Registration& r : infos) out.append(RegistrationDict(r));
  return out;
}

}  // namespace

void InitRegistry(py::module_& m) {
  m.def(
      "registry_metadata",
      [] {
        py::dict out;
        out["strategies"] = Listing<PlacementStrategy>();
        out["plugins"] = Listing<engine::Plugin>();
        out["actions"] = Listing<engine::Action>();
        out["policies"] = Listing<jobtime::JobTimePolicy>();
        return out;
      },
      "Per registry (strategies, plugins, actions, policies), what each registered name declares: "
      "a list of dicts with name, description, parameters (name, type, default, help, example) "
      "and capabilities.");
}

}  // namespace gpufleet::bindings
