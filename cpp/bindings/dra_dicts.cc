#include "dra_dicts.h"

#include <pybind11/stl.h>

#include <string>
#include <utility>

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

template <typename T>
T Get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

}  // namespace

dra::Amounts ToAmounts(const py::handle& h) {
  dra::Amounts out;
  for (const py::handle& pair : h) out.push_back(pair.cast<std::pair<int, int64_t>>());
  return out;
}

std::vector<dra::Device> ToDevices(const py::handle& list) {
  std::vector<dra::Device> out;
  for (const py::handle& h : list) {
    const py::dict x = h.cast<py::dict>();
    dra::Device dev;
    dev.in_use = Get<bool>(x, "in_use", false);
    dev.multi = Get<bool>(x, "multi", false);
    if (x.contains("counters")) dev.counters = ToAmounts(x["counters"]);
    dev.unit = Get<int>(x, "unit", -1);
    dev.root = Get<int>(x, "root", -1);
    dev.twin = Get<int>(x, "twin", -1);
    out.push_back(std::move(dev));
  }
  return out;
}

std::vector<dra::Request> ToRequests(const py::handle& list) {
  std::vector<dra::Request> out;
  for (const py::handle& h : list) {
    const py::dict x = h.cast<py::dict>();
    dra::Request r;
    r.claim = x["claim"].cast<int>();
    r.group = x["group"].cast<int>();
    r.mode = Get<bool>(x, "all", false) ? dra::Mode::kAll : dra::Mode::kExactCount;
    r.count = Get<int>(x, "count", 1);
    r.admin = Get<bool>(x, "admin", false);
    for (const py::handle& c : x["candidates"].cast<py::list>()) {
      dra::Candidate cand;
      if (py::isinstance<py::int_>(c)) {
        cand.device = c.cast<int>();
      } else {
        const py::dict cd = c.cast<py::dict>();
        cand.device = cd["device"].cast<int>();
        cand.blocked = Get<bool>(cd, "blocked", false);
        if (cd.contains("capacity")) cand.capacity = ToAmounts(cd["capacity"]);
        cand.unit_take = Get<int64_t>(cd, "unit_take", -1);
      }
      r.candidates.push_back(std::move(cand));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<dra::Constraint> ToConstraints(const py::handle& list) {
  std::vector<dra::Constraint> out;
  for (const py::handle& h : list) {
    const py::dict x = h.cast<py::dict>();
    dra::Constraint c;
    c.claim = x["claim"].cast<int>();
    c.distinct = Get<bool>(x, "distinct", false);
    c.requests = x["requests"].cast<std::vector<int>>();
    c.values = x["values"].cast<std::vector<std::vector<int>>>();
    out.push_back(std::move(c));
  }
  return out;
}

py::dict ScoreDict(const dra::Score& s) {
  py::dict out;
  out["roots"] = s.roots;
  out["opened"] = s.opened;
  out["leftover"] = s.leftover;
  return out;
}

py::dict ResultDict(const dra::Result& r) {
  static const char* kVerdicts[] = {"allocated", "unallocatable", "error"};
  py::list choices;
  for (const dra::Choice& c : r.choices) choices.append(py::make_tuple(c.request, c.device, c.candidate));
  py::dict out;
  out["verdict"] = kVerdicts[static_cast<int>(r.verdict)];
  out["choices"] = choices;
  out["score"] = ScoreDict(r.score);
  out["reason"] = r.reason;
  out["steps"] = r.steps;
  out["gave_up"] = r.gave_up;
  out["proved_best"] = r.proved_best;
  out["error_request"] = r.error_request;
  out["error_device"] = r.error_device;
  return out;
}

}  // namespace gpufleet::bindings
