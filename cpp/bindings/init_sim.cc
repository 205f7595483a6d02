// Python bindings for the job-time simulator: whole columns in (any 1-D buffer of the right type,
// NumPy's or a stdlib array.array, so a caller need not import NumPy), a bound SimRun out (per-job
// and time-series columns as NumPy arrays or lists, a SimSummary); the run releases the GIL and
// re-takes it only for the progress callback.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"

#include "bindings/py_ints.h"
#include "bindings/py_json.h"
#include "bindings/status_cast.h"
#include "gpufleet/policies/lp_centre.h"
#include "gpufleet/policies/lp_solver.h"
#include "gpufleet/sim/simulator.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using jobtime::GpuPool;
using jobtime::JobSpec;

template <typename T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

// What one run returns to Python: the simulator's result kept whole, with the pool's facts the
// columns and summary need. Immutable once built; the classes below read it and build NumPy
// columns on access (copies, so they outlive the run object).
struct SimRun {
  sim::SimResult result;
  std::vector<std::string> models;
  int64_t total_gpus = 0;
  bool devices_placed = false;  // a placement strategy gave every start real devices
  bool gavel_compat = false;
};

// The per-job table and the time series, as views that keep their run alive.
struct SimJobs {
  std::shared_ptr<const SimRun> run;
};
struct SimTimeseries {
  std::shared_ptr<const SimRun> run;
};
// The run's summary with whether devices were placed (jobs_spanning_nodes is only defined then).
struct SimSummary {
  sim::Summary values;
  bool devices_placed = false;
  bool gavel_compat = false;  // dropped_jobs is only defined then
};

// One column per row type: its name, its help and how to build it, as a NumPy array or (`list`
// true) a Python list, which needs no NumPy. A new column is one line.
template <typename Row>
struct ColumnDef {
  const char* name;
  const char* doc;
  py::object (*make)(const std::vector<Row>&, bool list);
};

template <typename T, typename Row, typename F>
py::object Column(const std::vector<Row>& rows, bool list, F f) {
  if (list) {
    py::list out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) out[i] = py::cast(static_cast<T>(f(rows[i])));
    return std::move(out);
  }
  py::array_t<T> out(static_cast<py::ssize_t>(rows.size()));
  auto v = out.template mutable_unchecked<1>();
  for (size_t i = 0; i < rows.size(); ++i) v(static_cast<py::ssize_t>(i)) = static_cast<T>(f(rows[i]));
  return std::move(out);
}

using jobtime::Job;
const ColumnDef<Job> kJobColumns[] = {
    {"first_start", "Seconds at which the job first ran (-1: never).",
     [](const std::vector<Job>& J, bool list) { return Column<double>(J, list, [](const Job& j) { return j.first_start; }); }},
    {"end_time", "Seconds at which the job finished (-1: never).",
     [](const std::vector<Job>& J, bool list) { return Column<double>(J, list, [](const Job& j) { return j.end_time; }); }},
    {"queueing_delay", "Total seconds pending.",
     [](const std::vector<Job>& J, bool list) { return Column<double>(J, list, [](const Job& j) { return j.queueing_delay; }); }},
    {"run_time", "Seconds holding GPUs (restore stalls included).",
     [](const std::vector<Job>& J, bool list) { return Column<double>(J, list, [](const Job& j) { return j.run_time; }); }},
    {"gpu_time", "run_time x GPUs.",
     [](const std::vector<Job>& J, bool list) { return Column<double>(J, list, [](const Job& j) { return j.gpu_time; }); }},
    {"service", "Attained service: gpu_time x the model's performance factor.",
     [](const std::vector<Job>& J, bool list) { return Column<double>(J, list, [](const Job& j) { return j.service; }); }},
    {"preemptions", "Times the job was preempted.",
     [](const std::vector<Job>& J, bool list) { return Column<int64_t>(J, list, [](const Job& j) { return j.preemptions; }); }},
    {"migrations", "Times the job moved to another GPU model.",
     [](const std::vector<Job>& J, bool list) { return Column<int64_t>(J, list, [](const Job& j) { return j.migrations; }); }},
    {"max_nodes", "Most nodes the job's GPUs spanned in one start (0 without device placement).",
     [](const std::vector<Job>& J, bool list) { return Column<int64_t>(J, list, [](const Job& j) { return j.max_nodes; }); }},
    {"dropped", "Removed unfinished (Gavel-compatible mode: a stuck multi-GPU job); its end_time is its last try.",
     [](const std::vector<Job>& J, bool list) { return Column<bool>(J, list, [](const Job& j) { return j.dropped; }); }},
};

using sim::TimeSample;
const ColumnDef<TimeSample> kTimeColumns[] = {
    {"time", "Seconds of the scheduling point.",
     [](const std::vector<TimeSample>& T, bool list) { return Column<double>(T, list, [](const TimeSample& s) { return s.time; }); }},
    {"running_jobs", "Jobs running after it.",
     [](const std::vector<TimeSample>& T, bool list) {
       return Column<int64_t>(T, list, [](const TimeSample& s) { return s.running_jobs; });
     }},
    {"pending_jobs", "Jobs submitted and waiting after it.",
     [](const std::vector<TimeSample>& T, bool list) {
       return Column<int64_t>(T, list, [](const TimeSample& s) { return s.pending_jobs; });
     }},
    {"busy_gpus", "GPUs held after it.",
     [](const std::vector<TimeSample>& T, bool list) { return Column<int64_t>(T, list, [](const TimeSample& s) { return s.busy_gpus; }); }},
};

template <typename Owner, typename Row, size_t N>
void BindColumns(py::class_<Owner>& cls, const ColumnDef<Row> (&defs)[N],
                 const std::vector<Row>& (*rows)(const Owner&)) {
  for (const ColumnDef<Row>& c : defs) {
    auto make = c.make;
    cls.def_property_readonly(c.name, [make, rows](const Owner& o) { return make(rows(o), false); }, c.doc);
  }
  cls.def(
      "to_dict",
      [&defs, rows](const Owner& o) {
        py::dict d;
        for (const ColumnDef<Row>& c : defs) d[c.name] = c.make(rows(o), false);
        return d;
      },
      "Every column by name, as NumPy arrays in a fixed order (a DataFrame's input).");
  cls.def(
      "to_lists",
      [&defs, rows](const Owner& o) {
        py::dict d;
        for (const ColumnDef<Row>& c : defs) d[c.name] = c.make(rows(o), true);
        return d;
      },
      "Every column by name, as Python lists (float, int or bool values) in to_dict's order; "
      "needs no NumPy.");
  cls.def("__len__", [rows](const Owner& o) { return rows(o).size(); }, "Number of rows.");
  cls.def_property_readonly_static(
      "columns",
      [&defs](const py::object&) {
        std::vector<std::string> names;
        for (const ColumnDef<Row>& c : defs) names.push_back(c.name);
        return names;
      },
      "The column names, in to_dict's order.");
}

const std::vector<Job>& JobRows(const SimJobs& j) { return j.run->result.jobs; }
const std::vector<TimeSample>& TimeRows(const SimTimeseries& t) { return t.run->result.timeseries; }

py::dict SummaryDict(const SimSummary& s) {
  const sim::Summary& S = s.values;
  py::dict d;
  d["num_jobs"] = S.num_jobs;
  d["avg_jct"] = S.avg_jct;
  d["p50_jct"] = S.p50_jct;
  d["p95_jct"] = S.p95_jct;
  d["p99_jct"] = S.p99_jct;
  d["avg_queueing_delay"] = S.avg_queueing_delay;
  d["makespan"] = S.makespan;
  d["preemptions"] = S.preemptions;
  d["migrations"] = S.migrations;
  if (s.devices_placed) d["jobs_spanning_nodes"] = S.jobs_spanning_nodes;
  if (s.gavel_compat) d["dropped_jobs"] = S.dropped_jobs;
  d["gpu_utilization"] = S.gpu_utilization;
  return d;
}

void BindResults(py::module_& m) {
  py::class_<SimJobs> jobs(m, "SimJobs",
                           "A simulator run's per-job columns, in input order, as NumPy arrays "
                           "(one property per column, each a fresh copy). Immutable.");
  BindColumns(jobs, kJobColumns, &JobRows);
  jobs.def("__repr__", [](const SimJobs& j) {
    return absl::StrFormat("SimJobs(rows=%d)", j.run->result.jobs.size());
  });

  py::class_<SimTimeseries> ts(m, "SimTimeseries",
                               "A simulator run's state after each scheduling point, as NumPy "
                               "columns (empty unless the run recorded it). Immutable.");
  BindColumns(ts, kTimeColumns, &TimeRows);
  ts.def("__repr__", [](const SimTimeseries& t) {
    return absl::StrFormat("SimTimeseries(rows=%d)", t.run->result.timeseries.size());
  });

  py::class_<SimSummary>(m, "SimSummary", "A simulator run's totals (docs/simulator.md). Immutable.")
      .def_property_readonly("num_jobs", [](const SimSummary& s) { return s.values.num_jobs; }, "Jobs simulated.")
      .def_property_readonly("avg_jct", [](const SimSummary& s) { return s.values.avg_jct; },
                             "Mean job completion time, seconds.")
      .def_property_readonly("p50_jct", [](const SimSummary& s) { return s.values.p50_jct; }, "Median JCT.")
      .def_property_readonly("p95_jct", [](const SimSummary& s) { return s.values.p95_jct; }, "95th percentile JCT.")
      .def_property_readonly("p99_jct", [](const SimSummary& s) { return s.values.p99_jct; }, "99th percentile JCT.")
      .def_property_readonly("avg_queueing_delay", [](const SimSummary& s) { return s.values.avg_queueing_delay; },
                             "Mean seconds pending.")
      .def_property_readonly("makespan", [](const SimSummary& s) { return s.values.makespan; },
                             "Last completion minus first submission, seconds.")
      .def_property_readonly("preemptions", [](const SimSummary& s) { return s.values.preemptions; },
                             "Preemptions over all jobs.")
      .def_property_readonly("migrations", [](const SimSummary& s) { return s.values.migrations; },
                             "Migrations between GPU models over all jobs.")
      .def_property_readonly(
          "jobs_spanning_nodes",
          [](const SimSummary& s) -> std::optional<int64_t> {
            if (!s.devices_placed) return std::nullopt;
            return s.values.jobs_spanning_nodes;
          },
          "Jobs whose GPUs were ever on more than one node; None when no devices were placed.")
      .def_property_readonly("gpu_utilization", [](const SimSummary& s) { return s.values.gpu_utilization; },
                             "Busy GPU-seconds / (GPUs x makespan).")
      .def_property_readonly(
          "dropped_jobs",
          [](const SimSummary& s) -> std::optional<int64_t> {
            if (!s.gavel_compat) return std::nullopt;
            return s.values.dropped_jobs;
          },
          "Jobs removed unfinished (not in the JCT figures); None outside the Gavel-compatible mode.")
      .def("to_dict", &SummaryDict,
           "Plain data with stable snake_case keys, in a fixed order (jobs_spanning_nodes only when "
           "devices were placed, dropped_jobs only in the Gavel-compatible mode).")
      .def("__repr__", [](const SimSummary& s) {
        return absl::StrFormat("SimSummary(num_jobs=%d, avg_jct=%g, makespan=%g, gpu_utilization=%g)",
                               s.values.num_jobs, s.values.avg_jct, s.values.makespan,
                               s.values.gpu_utilization);
      });

  py::class_<SimRun, std::shared_ptr<SimRun>>(
      m, "SimRun",
      "What the job-time simulator returns (gpufleet.sim.simulate shapes it into DataFrames): "
      "per-job columns, the time series, the summary and the pool's models. Immutable.")
      .def_property_readonly("jobs", [](const std::shared_ptr<SimRun>& r) { return SimJobs{r}; },
                             "Per-job columns (SimJobs), in input order.")
      .def_property_readonly("timeseries", [](const std::shared_ptr<SimRun>& r) { return SimTimeseries{r}; },
                             "State after each scheduling point (SimTimeseries).")
      .def_property_readonly("summary",
                             [](const SimRun& r) {
                               return SimSummary{r.result.summary, r.devices_placed, r.gavel_compat};
                             },
                             "The run's totals (SimSummary).")
      .def_readonly("models", &SimRun::models, "The pool's GPU model names, in its order.")
      .def_readonly("total_gpus", &SimRun::total_gpus, "GPUs in the pool.")
      .def_property_readonly("scheduling_points", [](const SimRun& r) { return r.result.scheduling_points; },
                             "Times the policy was asked.")
      .def(
          "to_dict",
          [](const std::shared_ptr<SimRun>& r) {
            py::dict d;
            d["jobs"] = py::cast(SimJobs{r}).attr("to_dict")();
            d["timeseries"] = py::cast(SimTimeseries{r}).attr("to_dict")();
            d["summary"] =
                SummaryDict(SimSummary{r->result.summary, r->devices_placed, r->gavel_compat});
            d["models"] = r->models;
            d["total_gpus"] = r->total_gpus;
            d["scheduling_points"] = r->result.scheduling_points;
            return d;
          },
          "Plain data: jobs and timeseries (column dicts), summary, models, total_gpus, "
          "scheduling_points.")
      .def("__repr__", [](const SimRun& r) {
        return absl::StrFormat("SimRun(jobs=%d, total_gpus=%d, scheduling_points=%d)", r.result.jobs.size(),
                               r.total_gpus, r.result.scheduling_points);
      });
}

// The settings of one run, bound as SimOptions and checked when made: the policy, the core's
// SimOptions, and what only the run can resolve (the progress callable, the Gavel reference
// model's name, looked up in the run's pool).
struct RunOptions {
  std::string policy;
  sim::SimOptions sim;
  py::object progress = py::none();
  std::optional<std::string> reference_model;  // Gavel's mode: a model name; none: no reference
};

// A (types x types x models) array of co-located rates into GavelCompat::pair_rate (the core
// checks it against the jobs and models).
void ReadPairRates(const py::handle& value, jobtime::GavelCompat* out) {
  Arr<double> a = Arr<double>::ensure(value);
  if (!a || a.ndim() != 3 || a.shape(0) != a.shape(1))
    throw InvalidInput("simulate: gavel pair_rate must be a (types x types x models) array");
  auto v = a.unchecked<3>();
  out->types = static_cast<int>(a.shape(0));
  out->pair_rate.clear();
  for (py::ssize_t i = 0; i < a.shape(0); ++i)
    for (py::ssize_t k = 0; k < a.shape(1); ++k)
      for (py::ssize_t m = 0; m < a.shape(2); ++m) out->pair_rate.push_back(v(i, k, m));
}

jobtime::GavelCompat GavelFrom(const py::dict& g, std::optional<std::string>* reference_model) {
  // {"drop_stuck_jobs": bool, "charge_idle_gaps": bool, "fifo_stale_type": bool,
  //  "reference_model": name or None, "job_type": [int per job], "pair_rate": (types x types x
  //  models) array}; missing keys keep GavelCompat's defaults.
  jobtime::GavelCompat out;
  out.enabled = true;
  for (auto item : g) {
    const std::string key = item.first.cast<std::string>();
    if (key == "drop_stuck_jobs")
      out.drop_stuck_jobs = item.second.cast<bool>();
    else if (key == "charge_idle_gaps")
      out.charge_idle_gaps = item.second.cast<bool>();
    else if (key == "fifo_stale_type")
      out.fifo_stale_type = item.second.cast<bool>();
    else if (key == "reference_model")
      *reference_model = item.second.is_none() ? std::nullopt
                                               : std::optional(item.second.cast<std::string>());
    else if (key == "job_type")
      out.job_type = item.second.cast<std::vector<int>>();
    else if (key == "pair_rate")
      ReadPairRates(item.second, &out);
    else
      throw InvalidInput("simulate: unknown gavel_compat option '" + key +
                         "' (drop_stuck_jobs, charge_idle_gaps, fifo_stale_type, reference_model, "
                         "job_type, pair_rate)");
  }
  return out;
}

RunOptions MakeRunOptions(const std::string& policy, bool tiresias_compat, double restore_delay,
                          double tick, double scheduling_interval, bool record_timeseries,
                          py::object progress, const std::string& placement, int64_t seed,
                          int nodes_per_rack, int racks_per_block, py::object gavel) {
  RunOptions o;
  o.policy = policy;
  o.sim.tiresias_compat = tiresias_compat;
  o.sim.restore_delay = restore_delay;
  o.sim.tick = tick;
  o.sim.scheduling_interval = scheduling_interval;
  o.sim.record_timeseries = record_timeseries;
  o.sim.placement = placement;
  if (seed < 0) throw InvalidInput("simulate: seed must be >= 0, got " + std::to_string(seed));
  o.sim.seed = static_cast<uint64_t>(seed);
  o.sim.nodes_per_rack = nodes_per_rack;
  o.sim.racks_per_block = racks_per_block;
  if (!gavel.is_none()) o.sim.gavel = GavelFrom(gavel.cast<py::dict>(), &o.reference_model);
  if (!progress.is_none() && !PyCallable_Check(progress.ptr()))
    throw py::type_error("simulate: progress must be a callable or None");
  o.progress = std::move(progress);
  return o;
}

// Whether a buffer's struct-module format code is T's (native byte order, any of its spellings).
template <typename T>
bool FormatIs(const std::string& format) {
  std::string code = format;
  if (code.size() == 2 && (code[0] == '@' || code[0] == '=')) code = code.substr(1);
  if constexpr (std::is_same_v<T, double>) return code == "d";
  if constexpr (std::is_same_v<T, int64_t>)
    return code == "q" || (code == "l" && sizeof(long) == sizeof(int64_t));  // NumPy says "l" on Linux
  return false;
}

// A job column as a vector: read straight from a 1-D buffer of T (a NumPy array, or a stdlib
// array.array of the command line's reader, which needs no NumPy), else converted by NumPy as
// before (a list, another dtype). Copied while the GIL is held: the caller's memory may change
// once the run releases it.
template <typename T>
std::vector<T> ReadColumn(const py::handle& column, const char* name) {
  if (PyObject_CheckBuffer(column.ptr())) {
    py::buffer_info b = py::reinterpret_borrow<py::buffer>(column).request();
    if (b.ndim == 1 && b.itemsize == static_cast<py::ssize_t>(sizeof(T)) && FormatIs<T>(b.format)) {
      std::vector<T> out(static_cast<size_t>(b.shape[0]));
      const char* base = static_cast<const char*>(b.ptr);
      for (size_t i = 0; i < out.size(); ++i)
        std::memcpy(&out[i], base + static_cast<py::ssize_t>(i) * b.strides[0], sizeof(T));
      return out;
    }
  }
  Arr<T> a = Arr<T>::ensure(column);
  if (!a || a.ndim() != 1)
    throw py::type_error(std::string("simulate: ") + name + " must be a 1-D array of numbers");
  auto v = a.template unchecked<1>();
  std::vector<T> out(static_cast<size_t>(a.shape(0)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = v(static_cast<py::ssize_t>(i));
  return out;
}

std::shared_ptr<SimRun> Simulate(const py::object& cluster, const py::object& job_id,
                                 const py::object& submit_time, const py::object& num_gpu,
                                 const py::object& duration, py::object speed, py::object memory_gib,
                                 const RunOptions& options) {
  GpuPool pool = Unwrap(GpuPool::FromJson(PyToJson(cluster)));
  const std::vector<int64_t> id = ReadColumn<int64_t>(job_id, "job_id");
  const std::vector<double> sub = ReadColumn<double>(submit_time, "submit_time");
  const std::vector<int64_t> gpus = ReadColumn<int64_t>(num_gpu, "num_gpu");
  const std::vector<double> dur = ReadColumn<double>(duration, "duration");
  const size_t n = id.size();
  if (sub.size() != n || gpus.size() != n || dur.size() != n)
    throw InvalidInput("simulate: job columns have different lengths");
  std::vector<JobSpec> jobs(n);
  for (size_t i = 0; i < n; ++i) {
    jobs[i].id = id[i];
    jobs[i].submit_time = sub[i];
    const int64_t num_gpu = gpus[i];
    if (num_gpu < 1 || num_gpu > (1 << 30))
      throw InvalidInput("simulate: job " + std::to_string(jobs[i].id) +
                         ": num_gpu must be from 1 to 2^30, got " + std::to_string(num_gpu));
    jobs[i].num_gpu = static_cast<int>(num_gpu);
    jobs[i].duration = dur[i];
  }
  if (!speed.is_none()) {
    Arr<double> s = speed.cast<Arr<double>>();
    if (s.ndim() != 2 || s.shape(0) != static_cast<py::ssize_t>(n) ||
        s.shape(1) != pool.num_models())
      throw InvalidInput("simulate: speed must be a (jobs x GPU models) array");
    auto sv = s.unchecked<2>();
    for (size_t i = 0; i < n; ++i) {
      jobs[i].speed.resize(pool.num_models());
      for (int m = 0; m < pool.num_models(); ++m) jobs[i].speed[m] = sv(i, m);
    }
  }
  if (!memory_gib.is_none()) {
    Arr<double> mem = memory_gib.cast<Arr<double>>();
    if (mem.size() != static_cast<py::ssize_t>(n))
      throw InvalidInput("simulate: memory_gib has the wrong length");
    auto mv = mem.unchecked<1>();
    for (size_t i = 0; i < n; ++i) jobs[i].memory_gib = mv(i);
  }
  auto policy = Unwrap(jobtime::MakeJobTimePolicy(options.policy));
  sim::SimOptions o = options.sim;
  if (options.reference_model) o.gavel.reference_model = pool.Find(*options.reference_model);
  if (!options.progress.is_none()) {
    // A borrowed handle (the options object keeps the callable alive for the call): the
    // simulator may copy and destroy this std::function without the GIL, which must not touch
    // reference counts.
    o.progress = [fn = py::handle(options.progress)](int64_t finished) {
      py::gil_scoped_acquire gil;
      fn(finished);
    };
  }
  absl::StatusOr<sim::SimResult> r;
  {
    py::gil_scoped_release release;
    r = sim::Simulate(pool, std::move(jobs), *policy, o);
  }
  auto run = std::make_shared<SimRun>();
  run->result = Unwrap(std::move(r));
  for (int m = 0; m < pool.num_models(); ++m) run->models.push_back(pool.model(m).name);
  run->total_gpus = pool.total_gpus();
  run->devices_placed = !o.placement.empty() && !o.gavel.enabled;
  run->gavel_compat = o.gavel.enabled;
  return run;
}

void BindOptions(py::module_& m) {
  py::class_<RunOptions>(
      m, "SimOptions",
      "The settings of one simulator run (gpufleet.sim.simulate documents each), given by "
      "keyword and checked when made; immutable. sim_run takes it after the job columns.")
      .def(py::init(&MakeRunOptions), py::arg("policy"), py::kw_only(),
           py::arg("tiresias_compat") = false, py::arg("restore_delay") = 0.0,
           py::arg("tick") = 0.0, py::arg("scheduling_interval") = 0.0,
           py::arg("record_timeseries") = true, py::arg("progress") = py::none(),
           py::arg("placement") = "binpack", py::arg("seed") = 0,
           py::arg("nodes_per_rack") = 0, py::arg("racks_per_block") = 0,
           py::arg("gavel") = py::none())
      .def_readonly("policy", &RunOptions::policy, "The policy spec, e.g. \"las\" or \"fifo(x=1)\".")
      .def_property_readonly("placement", [](const RunOptions& o) { return o.sim.placement; },
                             "The placement strategy giving starts real devices; \"\" counts GPUs only.")
      .def_property_readonly("seed", [](const RunOptions& o) { return o.sim.seed; },
                             "Seeds the agnostic policies' model draw.")
      .def_property_readonly("gavel_compat", [](const RunOptions& o) { return o.sim.gavel.enabled; },
                             "Whether Gavel's simulator is reproduced (gavel= was given).")
      .def("__repr__", [](const RunOptions& o) {
        return absl::StrFormat("SimOptions(policy=%s, placement=%s, seed=%d)", o.policy,
                               o.sim.placement, o.sim.seed);
      });
}

}  // namespace

void InitSim(py::module_& m) {
  BindResults(m);
  m.def("sim_check_policy",
        [](const std::string& spec) { Unwrap(jobtime::MakeJobTimePolicy(spec)); },
        py::arg("spec"), "Raises KeyError/ValueError if the policy spec is not valid.");
  BindOptions(m);
  m.def("sim_run", &Simulate, py::arg("cluster"), py::arg("job_id"), py::arg("submit_time"),
        py::arg("num_gpu"), py::arg("duration"), py::arg("speed"), py::arg("memory_gib"),
        py::arg("options"),
        "Runs the job-time simulator over the job columns with the run's SimOptions; see "
        "gpufleet.sim.simulate for the friendly wrapper.");
  // The LP solver gavel-lp uses, exposed so tests can cross-check it against another solver.
  m.def("maximize_lp",
        [](const std::vector<std::vector<double>>& a, const std::vector<double>& b,
           const std::vector<double>& c, py::handle max_iterations_arg) {
          const int max_iterations = static_cast<int>(
              IntArg(max_iterations_arg, "max_iterations", std::numeric_limits<int>::min(),
                     std::numeric_limits<int>::max()));
          absl::StatusOr<jobtime::LpSolution> r;
          {
            py::gil_scoped_release release;
            r = jobtime::MaximizeLp(a, b, c, max_iterations);
          }
          jobtime::LpSolution s = Unwrap(std::move(r));
          return std::make_pair(s.objective, py::array_t<double>(s.x.size(), s.x.data()));
        },
        py::arg("a"), py::arg("b"), py::arg("c"), py::arg("max_iterations") = py::int_(100000),
        "Maximises c.x subject to a x <= b, x >= 0 with COIN-OR CLP (the solver behind gavel-lp); "
        "`a` is a list of rows (or a 2-D array). Returns (objective, x). ValueError for bad "
        "shapes, non-finite or too large entries, and infeasible or unbounded LPs; RuntimeError "
        "when max_iterations is reached.");
  m.def("maximize_lp_centred",
        [](const std::vector<std::vector<double>>& a, const std::vector<double>& b,
           const std::vector<double>& c, std::vector<double> row_weights,
           std::vector<double> column_weights) {
          absl::StatusOr<jobtime::LpSolution> r;
          {
            py::gil_scoped_release release;
            r = jobtime::MaximizeLpCentred(a, b, c, {std::move(row_weights), std::move(column_weights)});
          }
          jobtime::LpSolution s = Unwrap(std::move(r));
          return std::make_pair(s.objective, py::array_t<double>(s.x.size(), s.x.data()));
        },
        py::arg("a"), py::arg("b"), py::arg("c"), py::arg("row_weights") = std::vector<double>(),
        py::arg("column_weights") = std::vector<double>(),
        "Like maximize_lp, but returns the centre of the optimal face (the limit of the central "
        "path, where an interior-point solver ends; with c = 0 the analytic centre of the feasible "
        "set). Optional barrier weights per row (> 0) and per column (0: the column is free of x "
        ">= 0). ValueError also when the feasible set has no interior.");
}

}  // namespace gpufleet::bindings
