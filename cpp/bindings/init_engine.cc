// Bindings for the engine area: the batch scheduler (queues, jobs, cycles), its registries, and
// plugins written in Python (the slow path: each callback takes the GIL and receives small view
// objects; meant for notebooks and prototypes). The values it returns are bound in
// init_engine_results.cc.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_format.h"

#include "gpufleet/engine/callback_points.h"
#include "gpufleet/engine/config.h"
#include "gpufleet/engine/plugin.h"
#include "gpufleet/engine/plugin_switches.h"
#include "gpufleet/engine/action.h"
#include "gpufleet/engine/scenario_json.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "gpufleet/engine/water_fill.h"
#include "gpufleet/io/spec_json.h"
#include "locking.h"
#include "py_engine_types.h"
#include "py_ints.h"
#include "py_json.h"
#include "py_plugin_order.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using engine::JobInfo;
using engine::QueueInfo;
using engine::Session;
using engine::TaskInfo;

Json ToJson(const py::handle& obj) {
  if (obj.is_none()) return Json();
  return PyToJson(obj);
}
py::object ToPy(const Json& j) { return JsonToPy(j); }

int Sign(const py::object& v) {
  double x = v.cast<double>();
  return x < 0 ? -1 : (x > 0 ? 1 : 0);
}

// A Python plugin's answer to a job check: None/True/"" pass, False or a reason text refuse.
absl::Status Reason(const py::object& v) {
  std::string why;
  if (v.is_none()) return absl::OkStatus();
  if (py::isinstance<py::bool_>(v)) {
    if (v.cast<bool>()) return absl::OkStatus();
    why = "rejected by a Python plugin";
  } else {
    why = v.cast<std::string>();
  }
  return why.empty() ? absl::OkStatus() : absl::FailedPreconditionError(why);
}

// A plugin written in Python answers the callback points whose Python method its object defines
// (callback_points.h: each point names its method); the session records them like a native
// plugin's, so a Python plugin with `predicate` serves as the predicates provider.
class PyPlugin : public engine::Plugin {
 public:
  explicit PyPlugin(py::object impl) : impl_(std::move(impl)) {}
  ~PyPlugin() override {
    py::gil_scoped_acquire gil;
    impl_ = py::object();
  }

  void OnSessionOpen(Session& s) override {
    py::gil_scoped_acquire gil;
    for (const engine::CallbackPoint& p : engine::CallbackPoints())
      if (p.python_method != nullptr && py::hasattr(impl_, p.python_method)) Register(s, p);
  }

 private:
  // Callbacks capture `this`, never a py::object: the session's std::functions are copied and
  // destroyed without the GIL, which must not touch Python reference counts.
  void Register(Session& s, const engine::CallbackPoint& point) {
    using engine::Point;
    PyPlugin* self = this;
    const char* method = point.python_method;
    const std::string& me = name();
    switch (point.point) {
      // Orders answer consistently (py_plugin_order.h): the engine's sorts rely on it.
      case Point::kJobOrder:
        s.AddJobOrderFn(me, [&s, self, method, seen = std::make_shared<ConsistentOrder<JobView>>()](int a, int b) {
          const JobView va = ViewOf(s, s.jobs()[a]), vb = ViewOf(s, s.jobs()[b]);
          return seen->Compare(a, va, b, vb, [&] { return self->Ask(method, va, vb); });
        });
        return;
      case Point::kQueueOrder:
        s.AddQueueOrderFn(me, [&s, self, method, seen = std::make_shared<ConsistentOrder<QueueView>>()](int a, int b) {
          const QueueView va = ViewOf(s.queues()[a]), vb = ViewOf(s.queues()[b]);
          return seen->Compare(a, va, b, vb, [&] { return self->Ask(method, va, vb); });
        });
        return;
      case Point::kTaskOrder:
        s.AddTaskOrderFn(me, [&s, self, method, seen = std::make_shared<ConsistentOrder<TaskView>>()](int a, int b) {
          const TaskView va = ViewOf(s, s.tasks()[a]), vb = ViewOf(s, s.tasks()[b]);
          return seen->Compare(a, va, b, vb, [&] { return self->Ask(method, va, vb); });
        });
        return;
      case Point::kPredicates:
        s.DisableNodeClasses();  // it sees node names
        s.DisableFitCache();
        s.AddPredicateFn(me, [&s, self, method](const TaskInfo& t, int node) {
          py::gil_scoped_acquire g;
          absl::Status why =
              Reason(self->impl_.attr(method)(ViewOf(s, t), s.state().node(node).name));
          return why.ok() ? FitResult::Ok() : FitResult::Unschedulable(std::string(why.message()));
        });
        return;
      case Point::kNodeScore:
        s.DisableNodeClasses();  // it sees node names
        s.AddNodeScoreFn(me, [&s, self, method](const TaskInfo& t, int node) {
          py::gil_scoped_acquire g;
          const std::string& where = s.state().node(node).name;
          const double score = self->impl_.attr(method)(ViewOf(s, t), where).cast<double>();
          if (!std::isfinite(score))
            throw InvalidInput(absl::StrFormat(
                "plugin %s: %s returned %g for task %s on node %s; a score must be a finite "
                "number", self->name(), method, score, t.name(), where));
          return score;
        });
        return;
      case Point::kPreemptable:
      case Point::kReclaimable: {
        engine::VictimsFn fn = [&s, self, method](const TaskInfo& p, const std::vector<int>& cands) {
          py::gil_scoped_acquire g;
          py::list views;
          for (int c : cands) views.append(py::cast(ViewOf(s, s.tasks()[c])));
          std::set<std::string> names;
          for (auto n : self->impl_.attr(method)(ViewOf(s, p), views)) names.insert(n.cast<std::string>());
          std::vector<int> out;
          for (int c : cands)
            if (names.count(s.tasks()[c].name())) out.push_back(c);
          return out;
        };
        if (point.point == Point::kPreemptable) s.AddPreemptableFn(me, std::move(fn));
        else s.AddReclaimableFn(me, std::move(fn));
        return;
      }
      case Point::kOverused:
        s.AddOverusedFn(me, [self, method](const QueueInfo& q) {
          py::gil_scoped_acquire g;
          return self->impl_.attr(method)(ViewOf(q)).cast<bool>();
        });
        return;
      case Point::kJobReady:
        s.AddJobReadyFn(me, [&s, self, method](const JobInfo& j) {
          py::gil_scoped_acquire g;
          return self->impl_.attr(method)(ViewOf(s, j)).cast<bool>();
        });
        return;
      case Point::kJobValid:
        s.AddJobValidFn(me, [&s, self, method](const JobInfo& j) {
          py::gil_scoped_acquire g;
          return Reason(self->impl_.attr(method)(ViewOf(s, j)));
        });
        return;
      case Point::kEnqueueable:
        s.AddEnqueueableFn(me, [&s, self, method](const JobInfo& j) {
          py::gil_scoped_acquire g;
          return Reason(self->impl_.attr(method)(ViewOf(s, j)));
        });
        return;
      case Point::kAllocatable:
        s.AddAllocatableFn(me, [&s, self, method](const QueueInfo& q, const TaskInfo& t) {
          py::gil_scoped_acquire g;
          return self->impl_.attr(method)(ViewOf(q), ViewOf(s, t)).cast<bool>();
        });
        return;
      case Point::kTargetJob:
      case Point::kDeviceStrategy:
        return;  // the table names no Python method for them
    }
  }

  // An order callback's answer for two views, as -1, 0 or 1.
  template <typename View>
  int Ask(const char* method, const View& a, const View& b) {
    py::gil_scoped_acquire g;
    return Sign(impl_.attr(method)(a, b));
  }

  py::object impl_;
};

std::set<std::string>& PythonPluginNames() {
  static auto* names = new std::set<std::string>();
  return *names;
}

// The Python side keeps name -> class in gpufleet.engine._PYTHON_PLUGINS, so registering a name
// again (re-running a notebook cell) replaces the class; the native registry entry looks it up.
void RegisterPythonPlugin(const std::string& name) {
  if (PythonPluginNames().count(name)) return;
  if (Registry<engine::Plugin>::Global().Contains(name))
    throw InvalidInput("a native plugin named \"" + name + "\" exists; choose another name");
  if (name.empty() || name.find_first_of("(),= ") != std::string::npos)
    throw InvalidInput("plugin name \"" + name + "\" must be a non-empty word");
  PythonPluginNames().insert(name);
  // A Python plugin checks its own arguments (they become the class's keyword arguments).
  Registry<engine::Plugin>::Global().Register(
      {.name = name, .description = "Python plugin (slow path)", .open_params = true},
      [name](const Params& params) -> absl::StatusOr<std::unique_ptr<engine::Plugin>> {
        const Json& args = params.json();
        py::gil_scoped_acquire gil;
        try {
          py::object table = py::module_::import("gpufleet.engine").attr("_PYTHON_PLUGINS");
          py::object cls = table.attr("get")(name);
          if (cls.is_none())
            return absl::NotFoundError("Python plugin \"" + name + "\" is no longer registered");
          py::dict kwargs = ToPy(args);
          return std::unique_ptr<engine::Plugin>(new PyPlugin(cls(**kwargs)));
        } catch (py::error_already_set& e) {
          return absl::InvalidArgumentError("plugin " + name + ": " + std::string(e.what()));
        }
      });
}

// The core's WaterFill reads NaN and negative values as 0 (its callers compute them); from
// Python they are mistakes, named here.
std::vector<double> CheckedWaterFill(double total, const std::vector<double>& weights,
                                     const std::vector<double>& caps) {
  if (!std::isfinite(total) || total < 0)
    throw InvalidInput(absl::StrFormat("water_fill: total must be a finite number >= 0, got %g", total));
  if (weights.size() != caps.size())
    throw InvalidInput(absl::StrFormat("water_fill: %d weights but %d caps; give one of each per queue",
                                          weights.size(), caps.size()));
  for (size_t q = 0; q < weights.size(); ++q) {
    if (!std::isfinite(weights[q]) || weights[q] < 0)
      throw InvalidInput(absl::StrFormat("water_fill: weights[%d] must be a finite number >= 0, got %g",
                                            q, weights[q]));
    if (!(caps[q] >= 0))
      throw InvalidInput(absl::StrFormat(
          "water_fill: caps[%d] must be >= 0 (infinity for no cap), got %g", q, caps[q]));
  }
  return engine::WaterFill(total, weights, caps);
}

constexpr char kEngine[] = "this engine";

// A cycle holds the engine's lock from start to end with the GIL released; Python plugins take
// the GIL for each callback. Returns the cycle's number with its result.
std::pair<int, engine::CycleResult> RunCycle(engine::GuardedScheduler& g, std::optional<double> now) {
  auto [cycle, r] = Writing(g, kEngine, [&](engine::Scheduler& s) {
    const int number = s.cycles();
    return std::make_pair(number, now ? s.RunCycleAt(*now) : s.RunCycle());
  });
  return {cycle, Unwrap(std::move(r))};
}

// A change to the scheduler: `f(Scheduler&)` returns a Status, under the exclusive lock.
template <typename F>
void Change(engine::GuardedScheduler& g, F&& f) {
  Check(Writing(g, kEngine, std::forward<F>(f)));
}

}  // namespace

void InitEngine(py::module_& m) {
  using engine::Scheduler;
  InitEngineResults(m);
  m.def(
      "engine_callback_points",
      [] {
        py::list out;
        for (const engine::CallbackPoint& p : engine::CallbackPoints()) {
          const engine::PluginSwitch* sw = engine::SwitchOf(p.point);
          py::dict d;
          d["name"] = p.name;
          d["signature"] = engine::SignatureText(p.signature);
          d["combine"] = engine::CombineText(p.combine);
          d["python_method"] = p.python_method ? py::object(py::str(p.python_method)) : py::none();
          d["volcano_switch"] = sw ? py::object(py::str(sw->key)) : py::none();
          out.append(d);
        }
        return out;
      },
      "The engine's callback points, in order: dicts with name, signature, combine (how the "
      "answers of several plugins combine), python_method (what a Python plugin defines to "
      "answer it, or None) and volcano_switch (the per-plugin switch that turns it off, or None).");
  m.def(
      "engine_plugin_switches",
      [] {
        py::list out;
        for (const engine::PluginSwitch& sw : engine::PluginSwitches()) {
          py::dict d;
          d["key"] = sw.key;
          d["point"] = sw.point ? py::object(py::str(engine::PointName(*sw.point))) : py::none();
          d["on_when_absent"] = sw.on_when_absent;
          d["supported_on"] = sw.supported_on;
          out.append(d);
        }
        return out;
      },
      "Volcano's per-plugin switches, as Volcano spells them: dicts with key, point (the callback "
      "point it gates, or None), on_when_absent and supported_on.");
  m.def("engine_default_config", [] { return ToPy(engine::DefaultConfigJson()); });
  m.def("engine_check_config",
        [](py::handle conf) { return ToPy(Unwrap(engine::ConfigFromJson(ToJson(conf))).ToJson()); },
        py::arg("config"), "Validate a scheduler configuration; returns it in canonical form or raises ValueError.");
  m.def("_register_python_plugin", &RegisterPythonPlugin, py::arg("name"));
  m.def("water_fill", &CheckedWaterFill, py::arg("total"), py::arg("weights"), py::arg("caps"),
        "Weighted water-filling of `total` over queues capped by `caps` (the proportion rule). "
        "ValueError unless total is finite and >= 0, weights finite and >= 0, caps >= 0 "
        "(infinity: no cap) and weights and caps of one length.");

  // Every method takes the engine's lock with the GIL released (locking.h): reads share it,
  // changes and whole cycles hold it alone. `cluster` is the accounting under the same lock.
  using engine::GuardedScheduler;
  py::class_<GuardedScheduler>(m, "EngineScheduler")
      .def(py::init([](py::object config) {
             auto g = std::make_unique<GuardedScheduler>();
             if (!config.is_none()) {
               Json j = ToJson(config);
               Change(*g, [&](Scheduler& s) { return s.Configure(j); });
             }
             return g;
           }),
           py::arg("config") = py::none())
      .def("configure",
           [](GuardedScheduler& g, py::handle c) {
             Json j = ToJson(c);
             Change(g, [&](Scheduler& s) { return s.Configure(j); });
           },
           py::arg("config"),
           "Replace the configuration (actions, tiers, plugin arguments); "
           "ValueError names a bad entry and changes nothing.")
      .def("config",
           [](const GuardedScheduler& g) {
             return ToPy(Reading(g, kEngine, [](const Scheduler& s) { return s.config().ToJson(); }));
           })
      .def_property_readonly("cluster", [](GuardedScheduler& g) -> GuardedCluster& { return g.cluster(); },
                             py::return_value_policy::reference_internal,
                             "The accounting as a Cluster that shares this engine's lock.")
      .def("add_node",
           [](GuardedScheduler& g, py::handle spec) {
             Node node = Unwrap(NodeFromJson(ToJson(spec)));
             Change(g, [&](Scheduler& s) { return s.cluster().AddNode(node); });
           },
           py::arg("spec"),
           "Add a node from its spec (the scenario format); ValueError for a bad "
           "spec or a duplicate name.")
      .def("add_queue",
           [](GuardedScheduler& g, py::handle spec) {
             engine::Queue q = Unwrap(engine::QueueFromJson(ToJson(spec)));
             Change(g, [&](Scheduler& s) { return s.AddQueue(q); });
           },
           py::arg("spec"),
           "Add a queue {name, weight, capability{cpu cores, memory bytes, gpu}, "
           "reclaimable}; ValueError if it exists or is invalid.")
      .def("update_queue",
           [](GuardedScheduler& g, py::handle spec) {
             engine::Queue q = Unwrap(engine::QueueFromJson(ToJson(spec)));
             Change(g, [&](Scheduler& s) { return s.UpdateQueue(q); });
           },
           py::arg("spec"),
           "Replace a queue's weight, capability and reclaimable flag; KeyError if "
           "it does not exist.")
      .def("delete_queue",
           [](GuardedScheduler& g, const std::string& n) {
             Change(g, [&](Scheduler& s) { return s.DeleteQueue(n); });
           },
           py::arg("name"),
           "Delete an empty queue; KeyError if absent, ValueError while jobs use "
           "it.")
      .def("queues",
           [](const GuardedScheduler& g) {
             return Reading(g, kEngine, [](const Scheduler& s) { return s.Queues(); });
           },
           "The queues, a list of QueueSpec (copies read under the engine's lock).")
      .def("submit_job",
           [](GuardedScheduler& g, py::handle spec) {
             engine::Job job = Unwrap(engine::JobFromJson(ToJson(spec)));
             Change(g, [&](Scheduler& s) { return s.SubmitJob(job); });
           },
           py::arg("spec"),
           "Submit a job {name, queue, replicas, min_available, priority, "
           "requests, ...}; ValueError if invalid or the name exists.")
      .def("update_job",
           [](GuardedScheduler& g, py::handle spec) {
             engine::Job job = Unwrap(engine::JobFromJson(ToJson(spec)));
             Change(g, [&](Scheduler& s) { return s.UpdateJob(job); });
           },
           py::arg("spec"), "Replace a pending job's spec; KeyError if absent.")
      .def("delete_job",
           [](GuardedScheduler& g, const std::string& n) {
             Change(g, [&](Scheduler& s) { return s.DeleteJob(n); });
           },
           py::arg("name"), "Delete a job and free what its tasks hold; KeyError if absent.")
      .def("start_task",
           [](GuardedScheduler& g, const std::string& job, py::handle task_arg,
              const std::string& node) {
             const int task = static_cast<int>(IntArg(task_arg, "task",
                                                      std::numeric_limits<int>::min(),
                                                      std::numeric_limits<int>::max()));
             Change(g, [&](Scheduler& s) { return engine::StartTask(&s, job, task, node); });
           },
           py::arg("job"), py::arg("task"), py::arg("node"))
      .def("jobs",
           [](const GuardedScheduler& g) {
             return Reading(g, kEngine, [](const Scheduler& s) { return s.Jobs(); });
           },
           "Every job's standing, a list of JobState (copies read under the engine's lock).")
      .def("job_tasks",
           [](const GuardedScheduler& g, const std::string& name) {
             auto tasks = Reading(g, kEngine, [&](const Scheduler& s) -> std::optional<std::vector<std::string>> {
               const engine::Job* j = s.FindJob(name);
               if (j == nullptr) return std::nullopt;
               std::vector<std::string> out;
               for (const Pod& p : j->tasks) out.push_back(p.name);
               return out;
             });
             if (!tasks) throw NotFound("job " + name + " does not exist");
             return *tasks;
           },
           py::arg("name"), "The pod names of a job's tasks, in order; KeyError if absent.")
      .def("load_scenario",
           [](GuardedScheduler& g, py::handle data) {
             Json j = ToJson(data);
             Change(g, [&](Scheduler& s) { return engine::LoadScenario(j, &s); });
           },
           py::arg("scenario"),
           "Add the nodes, queues and jobs of a scenario dict all at once: on any "
           "error nothing is added.")
      .def("run_cycle",
           [](GuardedScheduler& g, std::optional<double> now) {
             if (now && !std::isfinite(*now))
               throw InvalidInput(absl::StrFormat("now must be a finite number of seconds, got %g", *now));
             auto [cycle, result] = RunCycle(g, now);
             return NumberedCycle{cycle, std::move(result)};
           },
           py::arg("now") = py::none(),
           "Run one cycle at the clock's time, or at `now` seconds; returns its CycleResult "
           "(numbered with the cycle). Releases the GIL and holds the engine's lock for the whole "
           "cycle.")
      .def("now",
           [](const GuardedScheduler& g) {
             return Reading(g, kEngine, [](const Scheduler& s) { return s.now(); });
           },
           "Seconds on the scheduler's clock (monotonic, 0 when the scheduler was created).")
      .def_property_readonly("last_cycle_time",
                             [](const GuardedScheduler& g) {
                               return Reading(g, kEngine, [](const Scheduler& s) { return s.last_cycle_time(); });
                             })
      .def_property_readonly("cycles", [](const GuardedScheduler& g) {
        return Reading(g, kEngine, [](const Scheduler& s) { return s.cycles(); });
      });
}

}  // namespace gpufleet::bindings
