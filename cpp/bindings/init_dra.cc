// Dynamic Resource Allocation's native search (cpp/gpufleet/dra) for python/gpufleet/dra, which
// turns claims, classes and slices into a problem dict (the fields of dra::Problem) and reads the
// result dict back. The search runs without the GIL on its own copy of the problem, so any number
// of threads may solve at once.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "dra_dicts.h"
#include "gpufleet/dra/search.h"
#include "gpufleet/dra/solve.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

template <typename T>
T Get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

dra::Problem ToProblem(const py::dict& d) {
  dra::Problem p;
  p.devices = ToDevices(d["devices"]);
  p.counter_free = Get<std::vector<int64_t>>(d, "counter_free", {});
  p.capacity_free = Get<std::vector<int64_t>>(d, "capacity_free", {});
  p.unit_free = Get<std::vector<int64_t>>(d, "unit_free", {});
  p.unit_opened = Get<std::vector<uint8_t>>(d, "unit_opened", {});
  p.requests = ToRequests(d["requests"]);
  p.num_claims = d["num_claims"].cast<int>();
  p.num_groups = d["num_groups"].cast<int>();
  p.constraints = ToConstraints(Get<py::list>(d, "constraints", py::list()));
  p.max_devices_per_claim = Get<int>(d, "max_devices_per_claim", 32);
  p.objective = Get<std::string>(d, "objective", "pack") == "first" ? dra::Objective::kFirst
                                                                     : dra::Objective::kPack;
  p.locality = Get<bool>(d, "locality", false);
  p.budget = Get<int64_t>(d, "budget", 200000);
  p.combinations = Get<bool>(d, "combinations", false);
  return p;
}

dra::Problem Checked(const py::dict& d) {
  dra::Problem p = ToProblem(d);
  absl::Status s = dra::ValidateProblem(p);
  if (!s.ok()) throw InvalidInput(std::string(s.message()));
  return p;
}

}  // namespace

void InitDraPrepared(py::module_& m);

void InitDra(py::module_& m) {
  InitDraPrepared(m);
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
