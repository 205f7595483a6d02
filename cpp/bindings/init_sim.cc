// Python bindings for the job-time simulator: whole arrays in, whole arrays out; the run releases
// the GIL and re-takes it only for the progress callback.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/py_json.h"
#include "bindings/status_cast.h"
#include "gpufleet/policies/lp_solver.h"
#include "gpufleet/sim/simulator.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using jobtime::GpuPool;
using jobtime::JobSpec;

template <typename T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T, typename F>
py::array_t<T> Column(const std::vector<jobtime::Job>& jobs, F f) {
  py::array_t<T> out(jobs.size());
  auto v = out.template mutable_unchecked<1>();
  for (size_t i = 0; i < jobs.size(); ++i) v(i) = f(jobs[i]);
  return out;
}

py::dict Simulate(const py::object& cluster, Arr<int64_t> job_id, Arr<double> submit_time,
                  Arr<int64_t> num_gpu, Arr<double> duration, py::object speed,
                  py::object memory_gib, const std::string& policy_spec, bool tiresias_compat,
                  double restore_delay, double tick, double scheduling_interval,
                  bool record_timeseries, py::object progress,
                  const std::string& placement, int64_t seed) {
  GpuPool pool = Unwrap(GpuPool::FromJson(PyToJson(cluster)));
  const size_t n = job_id.size();
  if (submit_time.size() != static_cast<py::ssize_t>(n) ||
      num_gpu.size() != static_cast<py::ssize_t>(n) ||
      duration.size() != static_cast<py::ssize_t>(n))
    throw py::value_error("simulate: job columns have different lengths");
  std::vector<JobSpec> jobs(n);
  auto id = job_id.unchecked<1>();
  auto sub = submit_time.unchecked<1>();
  auto gpus = num_gpu.unchecked<1>();
  auto dur = duration.unchecked<1>();
  for (size_t i = 0; i < n; ++i) {
    jobs[i].id = id(i);
    jobs[i].submit_time = sub(i);
    if (gpus(i) < 1 || gpus(i) > (1 << 30))
      throw py::value_error("simulate: job " + std::to_string(id(i)) + ": num_gpu must be >= 1");
    jobs[i].num_gpu = static_cast<int>(gpus(i));
    jobs[i].duration = dur(i);
  }
  if (!speed.is_none()) {
    Arr<double> s = speed.cast<Arr<double>>();
    if (s.ndim() != 2 || s.shape(0) != static_cast<py::ssize_t>(n) ||
        s.shape(1) != pool.num_models())
      throw py::value_error("simulate: speed must be a (jobs x GPU models) array");
    auto sv = s.unchecked<2>();
    for (size_t i = 0; i < n; ++i) {
      jobs[i].speed.resize(pool.num_models());
      for (int m = 0; m < pool.num_models(); ++m) jobs[i].speed[m] = sv(i, m);
    }
  }
  if (!memory_gib.is_none()) {
    Arr<double> mem = memory_gib.cast<Arr<double>>();
    if (mem.size() != static_cast<py::ssize_t>(n))
      throw py::value_error("simulate: memory_gib has the wrong length");
    auto mv = mem.unchecked<1>();
    for (size_t i = 0; i < n; ++i) jobs[i].memory_gib = mv(i);
  }
  auto policy = Unwrap(jobtime::MakeJobTimePolicy(policy_spec));
  sim::SimOptions o;
  o.tiresias_compat = tiresias_compat;
  o.restore_delay = restore_delay;
  o.tick = tick;
  o.scheduling_interval = scheduling_interval;
  o.record_timeseries = record_timeseries;
  o.placement = placement;
  o.seed = static_cast<uint64_t>(seed);
  if (!progress.is_none()) {
    o.progress = [progress](int64_t finished) {
      py::gil_scoped_acquire gil;
      progress(finished);
    };
  }
  absl::StatusOr<sim::SimResult> r;
  {
    py::gil_scoped_release release;
    r = sim::Simulate(pool, std::move(jobs), *policy, o);
  }
  sim::SimResult res = Unwrap(std::move(r));
  const auto& J = res.jobs;
  py::dict per_job;
  per_job["first_start"] = Column<double>(J, [](auto& j) { return j.first_start; });
  per_job["end_time"] = Column<double>(J, [](auto& j) { return j.end_time; });
  per_job["queueing_delay"] = Column<double>(J, [](auto& j) { return j.queueing_delay; });
  per_job["run_time"] = Column<double>(J, [](auto& j) { return j.run_time; });
  per_job["gpu_time"] = Column<double>(J, [](auto& j) { return j.gpu_time; });
  per_job["service"] = Column<double>(J, [](auto& j) { return j.service; });
  per_job["preemptions"] = Column<int64_t>(J, [](auto& j) { return j.preemptions; });
  per_job["migrations"] = Column<int64_t>(J, [](auto& j) { return j.migrations; });
  per_job["max_nodes"] = Column<int64_t>(J, [](auto& j) { return j.max_nodes; });
  const auto& T = res.timeseries;
  auto ts_col = [&](auto f) {
    py::array_t<double> out(T.size());
    auto v = out.mutable_unchecked<1>();
    for (size_t i = 0; i < T.size(); ++i) v(i) = f(T[i]);
    return out;
  };
  py::dict ts;
  ts["time"] = ts_col([](auto& s) { return s.time; });
  ts["running_jobs"] = ts_col([](auto& s) { return s.running_jobs; });
  ts["pending_jobs"] = ts_col([](auto& s) { return s.pending_jobs; });
  ts["busy_gpus"] = ts_col([](auto& s) { return s.busy_gpus; });
  const auto& S = res.summary;
  py::dict summary;
  summary["num_jobs"] = S.num_jobs;
  summary["avg_jct"] = S.avg_jct;
  summary["p50_jct"] = S.p50_jct;
  summary["p95_jct"] = S.p95_jct;
  summary["p99_jct"] = S.p99_jct;
  summary["avg_queueing_delay"] = S.avg_queueing_delay;
  summary["makespan"] = S.makespan;
  summary["preemptions"] = S.preemptions;
  summary["migrations"] = S.migrations;
  if (!placement.empty()) summary["jobs_spanning_nodes"] = S.jobs_spanning_nodes;
  summary["gpu_utilization"] = S.gpu_utilization;
  py::list models;
  for (int m = 0; m < pool.num_models(); ++m) models.append(pool.model(m).name);
  py::dict out;
  out["jobs"] = per_job;
  out["timeseries"] = ts;
  out["summary"] = summary;
  out["models"] = models;
  out["total_gpus"] = pool.total_gpus();
  out["scheduling_points"] = res.scheduling_points;
  return out;
}

}  // namespace

void InitSim(py::module_& m) {
  m.def("sim_policy_names", &jobtime::JobTimePolicyNames, "Registered job-time policy names.");
  m.def("sim_policy_description", &jobtime::JobTimePolicyDescription, py::arg("name"));
  m.def("sim_check_policy",
        [](const std::string& spec) { Unwrap(jobtime::MakeJobTimePolicy(spec)); },
        py::arg("spec"), "Raises KeyError/ValueError if the policy spec is not valid.");
  m.def("sim_run", &Simulate, py::arg("cluster"), py::arg("job_id"), py::arg("submit_time"),
        py::arg("num_gpu"), py::arg("duration"), py::arg("speed"), py::arg("memory_gib"),
        py::arg("policy"), py::arg("tiresias_compat") = false, py::arg("restore_delay") = 0.0,
        py::arg("tick") = 0.0, py::arg("scheduling_interval") = 0.0,
        py::arg("record_timeseries") = true,
        py::arg("progress") = py::none(), py::arg("placement") = "binpack",
        py::arg("seed") = 0,
        "Runs the job-time simulator; see gpufleet.sim.simulate for the friendly wrapper.");
  // The LP solver gavel-lp uses, exposed so tests can cross-check it against another solver.
  m.def("maximize_lp",
        [](const std::vector<std::vector<double>>& a, const std::vector<double>& b,
           const std::vector<double>& c, int max_iterations) {
          absl::StatusOr<jobtime::LpSolution> r;
          {
            py::gil_scoped_release release;
            r = jobtime::MaximizeLp(a, b, c, max_iterations);
          }
          jobtime::LpSolution s = Unwrap(std::move(r));
          return std::make_pair(s.objective, py::array_t<double>(s.x.size(), s.x.data()));
        },
        py::arg("a"), py::arg("b"), py::arg("c"), py::arg("max_iterations") = 100000,
        "Maximises c.x subject to a x <= b, x >= 0 with COIN-OR CLP (the solver behind gavel-lp); "
        "`a` is a list of rows (or a 2-D array). Returns (objective, x). ValueError for bad "
        "shapes, non-finite or too large entries, and infeasible or unbounded LPs; RuntimeError "
        "when max_iterations is reached.");
}

}  // namespace gpufleet::bindings
