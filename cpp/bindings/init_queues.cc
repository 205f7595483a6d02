// Python bindings for queue trees (gpufleet.queues): KAI/Kueue/Volcano objects to queue specs,
// tree checks, fair shares and DRS values, and the multi-tenant simulation (whole arrays in,
// columns out; the run releases the GIL).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bindings/py_json.h"
#include "bindings/status_cast.h"
#include "gpufleet/io/strict_json.h"
#include "gpufleet/queues/division.h"
#include "gpufleet/queues/kueue_quota.h"
#include "gpufleet/queues/queue_json.h"
#include "gpufleet/queues/queue_tree.h"
#include "gpufleet/sim/queue_sim.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

template <typename T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

queues::QueueTree TreeFrom(const py::handle& specs, const std::vector<std::string>& resources = {}) {
  const Json j = PyToJson(specs);
  if (!j.is_array()) throw InvalidInput("queue specs: expected a list of queue dicts");
  std::vector<queues::QueueSpec> out;
  for (const Json& q : j) out.push_back(Unwrap(queues::QueueSpecFromJson(q)));
  return Unwrap(queues::QueueTree::Build(std::move(out), resources));
}

// {resource: amount} in engine units, for the tree's resources.
std::vector<double> QueueAmounts(const queues::QueueTree& t, const Json& m, const std::string& where) {
  std::vector<double> v(t.num_resources(), 0.0);
  if (m.is_null()) return v;
  if (!m.is_object()) throw InvalidInput(where + ": expected {resource: amount}");
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string r = queues::ResourceName(it.key());
    const int i = t.FindResource(r);
    if (i < 0) throw InvalidInput(absl::StrFormat("%s: the tree has no resource %s", where, r));
    v[i] = Unwrap(queues::ReadAmount(r, *it, false, where + "." + it.key()));
  }
  return v;
}

std::vector<std::string> ResourcesIn(const Json& maps) {
  std::vector<std::string> out;
  auto add = [&](const Json& m) {
    if (m.is_object())
      for (auto it = m.begin(); it != m.end(); ++it) out.push_back(queues::ResourceName(it.key()));
  };
  if (maps.is_object())
    for (auto it = maps.begin(); it != maps.end(); ++it) add(*it);
  return out;
}

py::dict FairShares(const py::handle& specs, const py::dict& capacity, const py::dict& requests,
                    const std::string& policy, const py::object& usage, double k_value) {
  const Json req = PyToJson(requests), cap = PyToJson(capacity);
  std::vector<std::string> extra = ResourcesIn(req);
  for (const std::string& r : ResourcesIn(Json{{"c", cap}})) extra.push_back(r);
  const queues::QueueTree t = TreeFrom(specs, extra);
  const int R = t.num_resources();
  const queues::DivisionPolicy p = Unwrap(queues::ParseDivisionPolicy(policy));
  std::vector<double> request(static_cast<size_t>(t.size()) * R, 0.0);
  for (auto it = req.begin(); it != req.end(); ++it) {
    const int q = t.Find(it.key());
    if (q < 0) throw NotFound(absl::StrFormat("requests: no queue %s", it.key()));
    if (!t.leaf(q))
      throw InvalidInput(absl::StrFormat("requests: queue %s has children; give leaves", it.key()));
    queues::AddAlongPath(t, q, QueueAmounts(t, *it, "requests." + it.key()), 1, &request);
  }
  std::vector<double> use;
  if (!usage.is_none()) {
    use.assign(request.size(), 0.0);
    const Json u = PyToJson(usage);
    for (auto it = u.begin(); it != u.end(); ++it) {
      const int q = t.Find(it.key());
      if (q < 0) throw NotFound(absl::StrFormat("usage: no queue %s", it.key()));
      for (auto r = it->begin(); r != it->end(); ++r) {
        const int i = t.FindResource(queues::ResourceName(r.key()));
        if (i < 0 || !r->is_number()) throw InvalidInput("usage: expected {queue: {resource: fraction}}");
        use[q * R + i] = r->get<double>();
      }
    }
  }
  const std::vector<double> capv = QueueAmounts(t, cap, "capacity");
  std::vector<double> fs;
  {
    py::gil_scoped_release release;
    queues::ShareDivider().Divide(p, {&t, capv, request, use, k_value}, &fs);
  }
  py::dict out;
  for (int q = 0; q < t.size(); ++q) {
    py::dict d;
    for (int r = 0; r < R; ++r) d[py::str(t.resource_names()[r])] = fs[q * R + r];
    out[py::str(t.name(q))] = d;
  }
  return out;
}

py::dict Drs(const py::handle& specs, const py::dict& usage) {
  const Json u = PyToJson(usage);
  const queues::QueueTree t = TreeFrom(specs, ResourcesIn(u));
  queues::KueueQuota kq(t);
  for (auto it = u.begin(); it != u.end(); ++it) {
    const int q = t.Find(it.key());
    if (q < 0) throw NotFound(absl::StrFormat("usage: no queue %s", it.key()));
    if (!t.leaf(q)) throw InvalidInput(absl::StrFormat("usage: queue %s has children", it.key()));
    kq.AddUsage(q, QueueAmounts(t, *it, "usage." + it.key()));
  }
  py::dict out;
  for (int q = 0; q < t.size(); ++q) out[py::str(t.name(q))] = kq.Drs(q);
  return out;
}

py::dict SimulateTree(const py::handle& specs, int gpus, Arr<int64_t> id, Arr<double> submit,
                  Arr<double> duration, Arr<int64_t> num_gpu, const std::vector<std::string>& queue,
                  Arr<int64_t> priority, const py::dict& options) {
  const queues::QueueTree t = TreeFrom(specs);
  const size_t n = static_cast<size_t>(id.size());
  if (static_cast<size_t>(submit.size()) != n || static_cast<size_t>(duration.size()) != n ||
      static_cast<size_t>(num_gpu.size()) != n || queue.size() != n ||
      static_cast<size_t>(priority.size()) != n)
    throw InvalidInput("simulate_queues: every job column must have the same length");
  std::vector<sim::QueueSimJob> jobs(n);
  for (size_t i = 0; i < n; ++i) {
    const int q = t.Find(queue[i]);
    if (q < 0) throw NotFound(absl::StrFormat("job %d (row %d): no queue %s", id.at(i), i, queue[i]));
    if (num_gpu.at(i) < 1 || num_gpu.at(i) > gpus)
      throw InvalidInput(absl::StrFormat("job %d (row %d): num_gpu must be from 1 to %d", id.at(i), i, gpus));
    jobs[i] = {id.at(i), submit.at(i), duration.at(i), static_cast<int>(num_gpu.at(i)), q,
               static_cast<int>(priority.at(i))};
  }
  const Json o = PyToJson(options);
  Check(CheckKnownKeys(o, "simulate_queues options",
                       {"policy", "k_value", "half_life", "window", "preempt", "interval",
                        "sample_every"}));
  auto num = [&](const char* key) {
    if (!o.contains(key)) return 0.0;
    if (!o[key].is_number())
      throw InvalidInput(absl::StrFormat("simulate_queues: %s must be a number", key));
    return o[key].get<double>();
  };
  sim::QueueSimOptions opt;
  if (o.contains("policy") && !o["policy"].is_string())
    throw InvalidInput("simulate_queues: policy must be a string");
  opt.policy = Unwrap(queues::ParseDivisionPolicy(o.value("policy", std::string("kai"))));
  opt.reclaim.policy = opt.policy;
  opt.k_value = num("k_value");
  opt.usage.half_life = num("half_life");
  opt.usage.window = num("window");
  if (o.contains("preempt") && !o["preempt"].is_boolean())
    throw InvalidInput("simulate_queues: preempt must be true or false");
  opt.preempt = o.value("preempt", true);
  opt.interval = num("interval");
  opt.sample_every = num("sample_every");
  absl::StatusOr<sim::QueueSimResult> r;
  {
    py::gil_scoped_release release;
    r = sim::SimulateQueues(t, gpus, jobs, opt);
  }
  const sim::QueueSimResult res = Unwrap(std::move(r));
  Arr<double> start(n), end(n);
  Arr<int64_t> preempted(n);
  for (size_t i = 0; i < n; ++i) {
    start.mutable_at(i) = res.jobs[i].start;
    end.mutable_at(i) = res.jobs[i].end;
    preempted.mutable_at(i) = res.jobs[i].preemptions;
  }
  const size_t m = res.samples.size();
  Arr<double> time(m), held(m), share(m), demand(m);
  Arr<int64_t> sq(m);
  for (size_t i = 0; i < m; ++i) {
    const sim::QueueSample& s = res.samples[i];
    time.mutable_at(i) = s.time;
    sq.mutable_at(i) = s.queue;
    held.mutable_at(i) = s.held;
    share.mutable_at(i) = s.fair_share;
    demand.mutable_at(i) = s.demand;
  }
  std::vector<std::string> names;
  for (int q = 0; q < t.size(); ++q) names.push_back(t.name(q));
  py::dict out;
  out["start"] = start;
  out["end"] = end;
  out["preemptions"] = preempted;
  out["sample_time"] = time;
  out["sample_queue"] = sq;
  out["sample_held"] = held;
  out["sample_fair_share"] = share;
  out["sample_demand"] = demand;
  out["queue_names"] = names;
  out["scheduling_points"] = res.scheduling_points;
  out["total_preemptions"] = res.preemptions;
  return out;
}

}  // namespace

void InitQueues(py::module_& m) {
  m.def("queue_objects",
        [](const py::handle& objects) {
          std::vector<Json> out = Unwrap(queues::QueuesFromObjects(PyToJson(objects)));
          py::list l;
          for (const Json& q : out) l.append(JsonToPy(q));
          return l;
        },
        py::arg("objects"),
        "KAI Queue, Kueue ClusterQueue/Cohort and Volcano Queue objects (dicts as their YAML "
        "reads) as gpufleet queue dicts; implicit Kueue cohorts are added.");
  m.def("queue_tree_check", [](const py::handle& specs) { (void)TreeFrom(specs); },
        py::arg("specs"),
        "Checks gpufleet queue dicts as a tree; ValueError names the first problem.");
  m.def("queue_fair_shares", &FairShares, py::arg("specs"), py::arg("capacity"),
        py::arg("requests"), py::arg("policy") = "kai", py::arg("usage") = py::none(),
        py::arg("k_value") = 0.0,
        "Fair shares of every queue ({queue: {resource: amount}}) for leaf requests.");
  m.def("queue_drs", &Drs, py::arg("specs"), py::arg("usage"),
        "Kueue's Dominant Resource Share of every queue for leaf usage (a fraction; inf for "
        "weight 0).");
  m.def("simulate_queues", &SimulateTree, py::arg("specs"), py::arg("gpus"), py::arg("id"),
        py::arg("submit_time"), py::arg("duration"), py::arg("num_gpu"), py::arg("queue"),
        py::arg("priority"), py::arg("options") = py::dict(),
        "The multi-tenant simulation over a queue tree; columns of jobs and queue samples.");
}

}  // namespace gpufleet::bindings
