// DRA questions kept in parts (cpp/gpufleet/dra/prepared.h): a node profile's table, a claim
// shape's requests on that profile and what one node holds cross once each as immutable objects
// (DraNodeTable, DraClaimRequests, DraHeld), checked where they are made; a question then names
// three of them, and dra_solve_prepared answers a list of such questions in one call, building
// each problem and solving it without the GIL. Answers are DraAnswer objects whose choices are
// read only for the one that wins.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dra_dicts.h"
#include "gpufleet/dra/prepared.h"
#include "gpufleet/dra/solve.h"
#include "gpufleet/engine/scheduler.h"
#include "locking.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using TablePtr = std::shared_ptr<const dra::NodeTable>;

// The requests with the sizes of the table they were checked against: any table of the same
// sizes takes them (every index they hold is in range there).
struct PreparedRequests {
  dra::ClaimRequests requests;
  size_t devices = 0, counters = 0, capacities = 0, units = 0;
  bool Fits(const dra::NodeTable& t) const {
    return t.devices.size() == devices && t.counter_total.size() == counters &&
           t.capacity_total.size() == capacities && t.unit_device.size() == units;
  }
};

struct PreparedHeld {
  dra::Held held;
  size_t devices = 0, counters = 0, capacities = 0;
  bool Fits(const dra::NodeTable& t) const {
    return t.devices.size() == devices && t.counter_total.size() == counters &&
           t.capacity_total.size() == capacities;
  }
};

void Check(const absl::Status& s) {
  if (!s.ok()) throw InvalidInput(std::string(s.message()));
}

// `unknown` begins the error for a name that is neither.
dra::Objective ObjectiveOf(const std::string& name, const std::string& unknown = "dra: unknown objective") {
  if (name == "pack") return dra::Objective::kPack;
  if (name == "first") return dra::Objective::kFirst;
  throw InvalidInput(unknown + " '" + name + "' (known: pack, first)");
}

TablePtr MakeTable(const py::dict& d) {
  auto t = std::make_shared<dra::NodeTable>();
  t->devices = ToDevices(d["devices"]);
  t->counter_total = d["counter_total"].cast<std::vector<int64_t>>();
  t->capacity_total = d["capacity_total"].cast<std::vector<int64_t>>();
  t->capacity_device = d["capacity_device"].cast<std::vector<int>>();
  t->unit_counters = d["unit_counters"].cast<std::vector<std::vector<int>>>();
  t->unit_device = d["unit_device"].cast<std::vector<int>>();
  Check(dra::ValidateTable(*t));
  return t;
}

std::shared_ptr<const PreparedRequests> MakeRequests(const dra::NodeTable& t, const py::dict& d) {
  auto p = std::make_shared<PreparedRequests>();
  p->requests.requests = ToRequests(d["requests"]);
  p->requests.num_claims = d["num_claims"].cast<int>();
  p->requests.num_groups = d["num_groups"].cast<int>();
  p->requests.constraints = ToConstraints(d["constraints"]);
  p->requests.twin_signature = d["twin_signature"].cast<std::vector<int>>();
  p->requests.combinations = d["combinations"].cast<bool>();
  Check(dra::ValidateRequests(t, p->requests));
  p->devices = t.devices.size();
  p->counters = t.counter_total.size();
  p->capacities = t.capacity_total.size();
  p->units = t.unit_device.size();
  return p;
}

std::shared_ptr<const PreparedHeld> MakeHeld(const dra::NodeTable& t, const std::vector<int>& in_use,
                                             const std::vector<int>& sharers,
                                             const dra::Amounts& capacity_used,
                                             const dra::Amounts& counter_used) {
  auto h = std::make_shared<PreparedHeld>();
  h->held = dra::EmptyHeld(t);
  auto device = [&](int d) {
    if (d < 0 || d >= static_cast<int>(t.devices.size()))
      throw InvalidInput("DraHeld: device " + std::to_string(d) + " is out of range");
    return d;
  };
  for (int d : in_use) h->held.in_use[device(d)] = 1;
  for (int d : sharers) ++h->held.sharers[device(d)];
  for (const auto& [slot, amount] : capacity_used) {
    if (slot < 0 || slot >= static_cast<int>(t.capacity_total.size()))
      throw InvalidInput("DraHeld: capacity slot " + std::to_string(slot) + " is out of range");
    h->held.capacity_used[slot] += amount;
  }
  for (const auto& [slot, amount] : counter_used) {
    if (slot < 0 || slot >= static_cast<int>(t.counter_total.size()))
      throw InvalidInput("DraHeld: counter slot " + std::to_string(slot) + " is out of range");
    h->held.counter_used[slot] += amount;
  }
  h->devices = t.devices.size();
  h->counters = t.counter_total.size();
  h->capacities = t.capacity_total.size();
  return h;
}

using Question = std::tuple<TablePtr, std::shared_ptr<const PreparedRequests>,
                            std::shared_ptr<const PreparedHeld>>;

// (name, profile, held, counterparts per DRA device as (device, core, memory, cores slot, memory
// slot), claims' (core, memory) per accounting device)
using EngineNode = std::tuple<std::string, int, std::shared_ptr<const PreparedHeld>,
                              std::vector<std::vector<std::tuple<int, int64_t, int64_t, int, int>>>,
                              std::vector<std::pair<int64_t, int64_t>>>;

engine::DraLedger EngineLedger(const std::vector<TablePtr>& tables, const std::vector<EngineNode>& nodes,
                               const py::list& tasks, const std::map<std::string, double>& resources,
                               const std::map<std::string, std::map<std::string, double>>& queue_devices,
                               dra::Objective objective) {
  engine::DraLedger ledger;
  ledger.SetObjective(objective);
  Check(ledger.SetQueueResources(resources));
  for (const auto& [task, devices] : queue_devices) Check(ledger.SetQueueDevices(task, devices));
  for (const TablePtr& t : tables) {
    if (!t) throw InvalidInput("engine_dra_set: None among the tables");
    ledger.AddTable(t);
  }
  for (const auto& [name, profile, held, counterparts, usage] : nodes) {
    if (profile < 0 || profile >= static_cast<int>(tables.size()) || !held || !held->Fits(*tables[profile]))
      throw InvalidInput("engine_dra_set: node " + name + ": its profile or holds do not match");
    engine::DraNodeClaims n;
    n.profile = profile;
    n.held = held->held;
    for (const auto& list : counterparts) {
      n.counterparts.emplace_back();
      for (const auto& [device, core, memory, cores_slot, memory_slot] : list)
        n.counterparts.back().push_back({device, core, memory, cores_slot, memory_slot});
    }
    n.claim_usage = usage;
    Check(ledger.SetNode(name, std::move(n)));
  }
  for (const py::handle& h : tasks) {
    const py::tuple t = h.cast<py::tuple>();
    const std::string name = t[0].cast<std::string>();
    std::vector<std::shared_ptr<const dra::ClaimRequests>> by_profile;
    for (const py::handle& r : t[1].cast<py::list>()) {
      if (r.is_none()) {
        by_profile.push_back(nullptr);
        continue;
      }
      auto prepared = r.cast<std::shared_ptr<PreparedRequests>>();
      // Shares the requests with the Python object that owns them.
      by_profile.push_back(std::shared_ptr<const dra::ClaimRequests>(prepared, &prepared->requests));
    }
    Check(ledger.SetTask(name, std::move(by_profile), t[2].cast<std::vector<std::string>>()));
  }
  return ledger;
}

}  // namespace

void InitDraPrepared(py::module_& m) {
  py::class_<dra::NodeTable, std::shared_ptr<dra::NodeTable>>(
      m, "DraNodeTable",
      "What one node profile offers, by position: devices (multi, counters, unit, root), counter "
      "and capacity totals, packing units (gpufleet.dra.node_devices builds it).")
      .def(py::init([](const py::dict& d) { return std::const_pointer_cast<dra::NodeTable>(MakeTable(d)); }),
           py::arg("table"))
      .def_property_readonly("num_devices", [](const dra::NodeTable& t) { return t.devices.size(); });

  py::class_<PreparedRequests, std::shared_ptr<PreparedRequests>>(
      m, "DraClaimRequests",
      "What a set of claims asks of a node of one profile: requests with their candidates, "
      "constraints, twin signatures; checked against `table`.")
      .def(py::init([](const dra::NodeTable& t, const py::dict& d) {
             return std::const_pointer_cast<PreparedRequests>(MakeRequests(t, d));
           }),
           py::arg("table"), py::arg("requests"));

  py::class_<PreparedHeld, std::shared_ptr<PreparedHeld>>(
      m, "DraHeld",
      "What earlier claims hold on one node of `table`: devices held whole, devices whose "
      "capacity is consumed (once per result), capacity used per slot, counters used by devices "
      "published for other nodes.")
      .def(py::init([](const dra::NodeTable& t, const std::vector<int>& in_use,
                       const std::vector<int>& sharers, const dra::Amounts& capacity_used,
                       const dra::Amounts& counter_used) {
             return std::const_pointer_cast<PreparedHeld>(
                 MakeHeld(t, in_use, sharers, capacity_used, counter_used));
           }),
           py::arg("table"), py::arg("in_use") = std::vector<int>{},
           py::arg("sharers") = std::vector<int>{}, py::arg("capacity_used") = dra::Amounts{},
           py::arg("counter_used") = dra::Amounts{});

  py::class_<dra::Result>(m, "DraAnswer", "One native answer (see dra_solve for its fields).")
      .def_property_readonly("verdict",
                             [](const dra::Result& r) {
                               static const char* kVerdicts[] = {"allocated", "unallocatable", "error"};
                               return kVerdicts[static_cast<int>(r.verdict)];
                             })
      .def_property_readonly("ok", [](const dra::Result& r) { return r.verdict == dra::Verdict::kAllocated; })
      .def_property_readonly("rank",
                             [](const dra::Result& r) {
                               return py::make_tuple(r.score.roots, r.score.opened, r.score.leftover);
                             })
      .def_readonly("reason", &dra::Result::reason)
      .def_readonly("steps", &dra::Result::steps)
      .def_readonly("gave_up", &dra::Result::gave_up)
      .def("to_dict", &ResultDict);

  m.def(
      "dra_solve_prepared",
      [](const std::vector<Question>& questions, const std::string& objective, int64_t budget) {
        const dra::Objective o = ObjectiveOf(objective);
        if (budget < 0) throw InvalidInput("dra_solve_prepared: budget must be >= 0");
        for (const auto& [table, requests, held] : questions) {
          if (!table || !requests || !held) throw InvalidInput("dra_solve_prepared: None in a question");
          if (!requests->Fits(*table) || !held->Fits(*table))
            throw InvalidInput("dra_solve_prepared: requests or holds made for another node profile");
        }
        std::vector<dra::Result> out(questions.size());
        {
          py::gil_scoped_release nogil;
          for (size_t i = 0; i < questions.size(); ++i) {
            const auto& [table, requests, held] = questions[i];
            out[i] = dra::Solve(dra::BuildProblem(*table, requests->requests, held->held, o, budget));
          }
        }
        return out;
      },
      py::arg("questions"), py::arg("objective") = "pack", py::arg("budget") = 200000,
      "Answers each (DraNodeTable, DraClaimRequests, DraHeld) question; a list of DraAnswer.");

  m.def(
      "engine_dra_set",
      [](engine::GuardedScheduler& eng, const std::vector<TablePtr>& tables,
         const std::vector<EngineNode>& nodes, const py::list& tasks,
         const std::map<std::string, double>& resources,
         const std::map<std::string, std::map<std::string, double>>& queue_devices,
         const std::string& strategy) {
        const dra::Objective objective = ObjectiveOf(strategy, "engine_dra_set: unknown strategy");
        engine::DraLedger ledger = EngineLedger(tables, nodes, tasks, resources, queue_devices, objective);
        Writing(eng, "engine", [&](engine::Scheduler& s) { s.dra() = std::move(ledger); });
      },
      py::arg("engine"), py::arg("tables"), py::arg("nodes"), py::arg("tasks"),
      py::arg("resources") = std::map<std::string, double>{},
      py::arg("queue_devices") = std::map<std::string, std::map<std::string, double>>{},
      py::arg("strategy") = "pack",
      "Sets the engine's DRA ledger (gpufleet.dra.engine builds the arguments): tables per node "
      "profile; nodes as (name, profile, DraHeld, counterparts, claims' usage); tasks as (name, "
      "DraClaimRequests or None per profile, refusal per profile); for queue trees, resources "
      "({queue resource: devices the slices publish}) and queue_devices ({task: {queue "
      "resource: devices its claims take}}); the strategy that picks the claims' devices (pack "
      "or first). Raises ValueError for bad input, leaving the ledger as it was.");
  m.def(
      "engine_dra_holdings",
      [](const engine::GuardedScheduler& eng) {
        auto holdings = Reading(eng, "engine", [](const engine::Scheduler& s) { return s.dra().holdings(); });
        py::dict out;
        for (const auto& [task, h] : holdings) {
          py::list choices;
          for (const dra::Choice& c : h.choices) choices.append(py::make_tuple(c.request, c.device, c.candidate));
          out[py::str(task)] = py::make_tuple(h.node, choices);
        }
        return out;
      },
      py::arg("engine"), "What each task's claims hold: {task: (node, [(request, device, candidate)])}.");
}

}  // namespace gpufleet::bindings
