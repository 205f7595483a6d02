// Dynamic Resource Allocation's native search (cpp/gpufleet/dra) for python/gpufleet/dra, which
// turns claims, classes and slices into a problem dict (the fields of dra::Problem) and reads the
// result dict back. The search runs without the GIL on its own copy of the problem, so any number
// of threads may solve at once.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "gpufleet/dra/search.h"
#include "gpufleet/dra/solve.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using dra::Amounts;

template <typename T>
T Get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

Amounts ToAmounts(const py::handle& h) {
  Amounts out;
  for (const py::handle& pair : h) {
    auto t = pair.cast<std::pair<int, int64_t>>();
    out.push_back(t);
  }
  return out;
}

dra::Problem ToProblem(const py::dict& d) {
  dra::Problem p;
  for (const py::handle& h : d["devices"].cast<py::list>()) {
    const py::dict x = h.cast<py::dict>();
    dra::Device dev;
    dev.in_use = Get<bool>(x, "in_use", false);
    dev.multi = Get<bool>(x, "multi", false);
    if (x.contains("counters")) dev.counters = ToAmounts(x["counters"]);
    dev.unit = Get<int>(x, "unit", -1);
    dev.root = Get<int>(x, "root", -1);
    dev.twin = Get<int>(x, "twin", -1);
    p.devices.push_back(std::move(dev));
  }
  p.counter_free = Get<std::vector<int64_t>>(d, "counter_free", {});
  p.capacity_free = Get<std::vector<int64_t>>(d, "capacity_free", {});
  p.unit_free = Get<std::vector<int64_t>>(d, "unit_free", {});
  p.unit_opened = Get<std::vector<uint8_t>>(d, "unit_opened", {});
  for (const py::handle& h : d["requests"].cast<py::list>()) {
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
    p.requests.push_back(std::move(r));
  }
  p.num_claims = d["num_claims"].cast<int>();
  p.num_groups = d["num_groups"].cast<int>();
  for (const py::handle& h : Get<py::list>(d, "constraints", py::list())) {
    const py::dict x = h.cast<py::dict>();
    dra::Constraint c;
    c.claim = x["claim"].cast<int>();
    c.distinct = Get<bool>(x, "distinct", false);
    c.requests = x["requests"].cast<std::vector<int>>();
    c.values = x["values"].cast<std::vector<std::vector<int>>>();
    p.constraints.push_back(std::move(c));
  }
  p.max_devices_per_claim = Get<int>(d, "max_devices_per_claim", 32);
  p.objective = Get<std::string>(d, "objective", "pack") == "first" ? dra::Objective::kFirst
                                                                     : dra::Objective::kPack;
  p.locality = Get<bool>(d, "locality", false);
  p.budget = Get<int64_t>(d, "budget", 200000);
  p.combinations = Get<bool>(d, "combinations", false);
  return p;
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

dra::Problem Checked(const py::dict& d) {
  dra::Problem p = ToProblem(d);
  absl::Status s = dra::ValidateProblem(p);
  if (!s.ok()) throw InvalidInput(std::string(s.message()));
  return p;
}

}  // namespace

void InitDra(py::module_& m) {
  m.def(
      "dra_solve",
      [](const py::dict& problem) {
        dra::Problem p = Checked(problem);
        dra::Result r;
        {
          py::gil_scoped_release nogil;
          r = dra::Solve(p);
        }
        return ResultDict(r);
      },
      py::arg("problem"),
      "Solves one DRA allocation question (a dict of dra::Problem's fields; see "
      "gpufleet.dra.problem). Returns verdict, choices (request, device, candidate), score, "
      "reason, steps, gave_up, proved_best, error_request and error_device.");
  m.def(
      "dra_score",
      [](const py::dict& problem, const std::vector<std::tuple<int, int, int>>& choices) {
        dra::Problem p = Checked(problem);
        std::vector<dra::Choice> cs;
        for (const auto& [r, d, c] : choices) {
          if (r < 0 || r >= static_cast<int>(p.requests.size()) || c < 0 ||
              c >= static_cast<int>(p.requests[r].candidates.size()))
            throw InvalidInput("dra_score: choice out of range");
          cs.push_back({r, d, c});
        }
        return ScoreDict(dra::ScoreOf(p, cs));
      },
      py::arg("problem"), py::arg("choices"),
      "The score of an allocation given as (request, device, candidate) choices.");
}

}  // namespace gpufleet::bindings
