// What every registry declares about its registrants, as plain Python data for listings (the
// CLI's --list-* options, the generated registry docs, notebooks): one list of dicts per registry.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gpufleet/core/registry.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/placement/strategy.h"
#include "gpufleet/policies/job_time_policy.h"
#include "py_json.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

py::dict ParamDict(const ParamSpec& p) {
  py::dict d;
  d["name"] = p.name;
  d["type"] = ParamTypeName(p.type);
  d["default"] = JsonToPy(p.default_value);
  d["help"] = p.help;
  d["example"] = JsonToPy(p.example);
  const std::string range = RangeText(p);
  d["range"] = range.empty() ? py::object(py::none()) : py::object(py::str(range));
  return d;
}

template <typename Traits>
py::dict RegistrationDict(const Registration<Traits>& r) {
  py::list params;
  for (const ParamSpec& p : r.params) params.append(ParamDict(p));
  py::dict out;
  out["name"] = r.name;
  out["description"] = r.description;
  out["parameters"] = params;
  out["traits"] = JsonToPy(r.traits.ToJson());
  out["open_parameters"] = r.open_params;
  return out;
}

template <typename T>
std::vector<typename Registry<T>::Record> Infos() {
  py::gil_scoped_release release;  // the registry's lock is never taken with the GIL held
  return Registry<T>::Global().Infos();
}

template <typename T>
py::list Listing() {
  py::list out;
  for (const auto& r : Infos<T>()) out.append(RegistrationDict(r));
  return out;
}

// Plugins: what each one answers is observed, by opening it (built from its declared defaults)
// on an empty session; None when it cannot be built without arguments (a Python plugin may
// require some).
py::list PluginListing() {
  py::list out;
  for (const auto& r : Infos<engine::Plugin>()) {
    std::optional<engine::PointSet> answers;
    {
      py::gil_scoped_release release;  // a Python plugin's factory takes the GIL itself
      auto observed = engine::ObserveAnswers(r.name, r.ExampleParams());
      if (observed.ok()) answers = *observed;
    }
    py::dict d = RegistrationDict(r);
    d["answers"] = answers ? py::object(py::cast(engine::PointNames(*answers)))
                           : py::object(py::none());
    out.append(d);
  }
  return out;
}

template <typename T>
void AddDuplicates(std::vector<std::string>& out) {
  for (const std::string& n : Registry<T>::Global().DuplicateNames()) out.push_back(n);
}

}  // namespace

void InitRegistry(py::module_& m) {
  m.def(
      "registry_metadata",
      [](std::optional<std::vector<std::string>> kinds) {
        auto wanted = [&](const char* kind) {
          return !kinds || std::find(kinds->begin(), kinds->end(), kind) != kinds->end();
        };
        py::dict out;
        if (wanted("strategies")) out["strategies"] = Listing<PlacementStrategy>();
        if (wanted("plugins")) out["plugins"] = PluginListing();
        if (wanted("actions")) out["actions"] = Listing<engine::Action>();
        if (wanted("policies")) out["policies"] = Listing<jobtime::JobTimePolicy>();
        return out;
      },
      py::arg("kinds") = py::none(),
      "Per registry (strategies, plugins, actions, policies; all, or those in `kinds`), what each "
      "registered name declares: a list of dicts with name, description, parameters (name, type, "
      "default, help, example, range), traits and open_parameters; plugins also list the "
      "callback points they answer (observed on an empty session; None when they cannot be built "
      "without arguments).");
  m.def(
      "registry_duplicates",
      [] {
        std::vector<std::string> out;
        AddDuplicates<PlacementStrategy>(out);
        AddDuplicates<engine::Plugin>(out);
        AddDuplicates<engine::Action>(out);
        AddDuplicates<jobtime::JobTimePolicy>(out);
        return out;
      },
      "Names registered twice in any registry (the second registration is refused).");
}

}  // namespace gpufleet::bindings
