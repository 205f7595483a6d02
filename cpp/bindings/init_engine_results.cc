// The engine's results as bound classes: what a cycle decided (CycleResult with its BindDecision,
// EvictDecision, QueueShare and HeldCapacity rows), job and queue summaries (JobState, QueueSpec)
// and the views Python plugins receive (JobView, TaskView, QueueView). Each is an immutable copy:
// read-only properties, no constructor from Python, nested values returned as views that keep
// their owner alive. `to_dict()` gives plain data for JSON/YAML, keys in a fixed order.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/engine/queue.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "py_engine_types.h"
#include "py_json.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using engine::BindDecision;
using engine::EvictDecision;
using engine::HeldCapacity;
using engine::QueueShare;
using engine::Resources;

constexpr auto kView = py::return_value_policy::reference_internal;

std::string Quoted(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

py::dict ResourcesDict(const Resources& r) {
  py::dict d;
  for (int i = 0; i < engine::kNumResources; ++i) d[engine::kResourceNames[i]] = r[i];
  return d;
}

std::string ResourcesRepr(const Resources& r) {
  return absl::StrFormat("Resources(cpu=%g, memory=%g, gpu=%g)", r[0], r[1], r[2]);
}

py::list DevicesList(const std::vector<DeviceGrant>& devices) {
  py::list out;
  for (const DeviceGrant& g : devices) {
    py::dict d;
    d["type"] = g.type;
    d["minor"] = g.minor;
    d["core"] = g.core;
    d["memory_bytes"] = g.memory_bytes;
    out.append(d);
  }
  return out;
}

py::dict BindDict(const BindDecision& b) {
  py::dict d;
  d["node"] = b.allocation.node;
  d["cpu_milli"] = b.allocation.cpu_milli;
  d["memory_bytes"] = b.allocation.memory_bytes;
  d["devices"] = DevicesList(b.allocation.devices);
  d["job"] = b.job;
  d["task"] = b.task;
  return d;
}

py::dict EvictDict(const EvictDecision& e) {
  py::dict d;
  d["job"] = e.job;
  d["task"] = e.task;
  d["node"] = e.node;
  d["reason"] = e.reason;
  return d;
}

py::dict QueueShareDict(const QueueShare& q) {
  py::dict d;
  d["queue"] = q.queue;
  d["weight"] = q.weight;
  d["allocated"] = ResourcesDict(q.allocated);
  d["request"] = ResourcesDict(q.request);
  d["deserved"] = ResourcesDict(q.deserved);
  d["held"] = ResourcesDict(q.held);
  d["share"] = q.share;
  return d;
}

py::dict HeldDict(const HeldCapacity& h) {
  py::dict d = ResourcesDict(h.resources);
  d["node"] = h.node;
  d["job"] = h.job;
  return d;
}

template <typename T, typename F>
py::list ListOf(const std::vector<T>& rows, F f) {
  py::list out;
  for (const T& row : rows) out.append(f(row));
  return out;
}

py::dict CycleDict(const NumberedCycle& c) {
  const engine::CycleResult& r = c.result;
  py::dict d;
  d["cycle"] = c.cycle;
  d["binds"] = ListOf(r.binds, BindDict);
  d["evictions"] = ListOf(r.evictions, EvictDict);
  d["pending"] = r.pending;
  d["queues"] = ListOf(r.queues, QueueShareDict);
  d["held"] = ListOf(r.held, HeldDict);
  d["target"] = r.target;
  return d;
}

std::vector<int> GpuMinors(const BindDecision& b) {
  std::vector<int> out;
  for (const DeviceGrant& g : b.allocation.devices)
    if (g.type == "gpu") out.push_back(g.minor);
  return out;
}

int64_t GpuCore(const BindDecision& b) {
  int64_t sum = 0;
  for (const DeviceGrant& g : b.allocation.devices)
    if (g.type == "gpu") sum += g.core;
  return sum;
}

double HeldGpus(const engine::CycleResult& r) {
  double sum = 0;
  for (const HeldCapacity& h : r.held) sum += h.resources[2];
  return sum;
}

void BindResources(py::module_& m) {
  py::class_<Resources>(m, "Resources",
                        "A fairness vector: cpu in millicores, memory in bytes and gpu in whole-GPU "
                        "equivalents (a 50% share counts 0.5); inf means unlimited.")
      .def_property_readonly("cpu", [](const Resources& r) { return r[0]; }, "CPU in millicores.")
      .def_property_readonly("memory", [](const Resources& r) { return r[1]; }, "Memory in bytes.")
      .def_property_readonly("gpu", [](const Resources& r) { return r[2]; },
                             "GPUs in whole-GPU equivalents.")
      .def("to_dict", &ResourcesDict, "Plain data: {\"cpu\", \"memory\", \"gpu\"}.")
      .def("__repr__", &ResourcesRepr);
}

void BindCycle(py::module_& m) {
  py::class_<BindDecision>(m, "BindDecision",
                           "A task the cycle bound: its job, the node and what it holds there (CPU, "
                           "memory and the devices).")
      .def_readonly("job", &BindDecision::job, "The job the task belongs to.")
      .def_readonly("task", &BindDecision::task, "The task's pod name.")
      .def_property_readonly("node", [](const BindDecision& b) { return b.allocation.node; },
                             "The node the task is bound to.")
      .def_property_readonly("cpu_milli", [](const BindDecision& b) { return b.allocation.cpu_milli; },
                             "CPU held, in millicores.")
      .def_property_readonly("memory_bytes",
                             [](const BindDecision& b) { return b.allocation.memory_bytes; },
                             "Memory held, in bytes.")
      .def_property_readonly(
          "devices", [](const BindDecision& b) -> const std::vector<DeviceGrant>& { return b.allocation.devices; },
          kView, "The devices held, a list of DeviceGrant.")
      .def_property_readonly("gpus", &GpuMinors, "Minor numbers of the GPUs held, in grant order.")
      .def_property_readonly("gpu_core", &GpuCore,
                             "GPU compute held, in percent of one GPU summed over its GPUs.")
      .def("to_dict", &BindDict,
           "Plain data: node, cpu_milli, memory_bytes, devices (type, minor, core, memory_bytes), job, task.")
      .def("__repr__", [](const BindDecision& b) {
        std::string devices;
        for (const DeviceGrant& g : b.allocation.devices)
          devices += absl::StrFormat("%s%s%d:%d%%", devices.empty() ? "" : ",", g.type, g.minor, g.core);
        return absl::StrFormat("BindDecision(%s -> %s, devices=[%s])", b.task, b.allocation.node, devices);
      });

  py::class_<EvictDecision>(m, "EvictDecision", "A running task the cycle evicted, and why.")
      .def_readonly("job", &EvictDecision::job, "The job the task belongs to.")
      .def_readonly("task", &EvictDecision::task, "The evicted task's pod name.")
      .def_readonly("node", &EvictDecision::node, "The node it was running on.")
      .def_readonly("reason", &EvictDecision::reason,
                    "Why it was evicted (e.g. preempted by task x, reclaimed for queue y).")
      .def("to_dict", &EvictDict, "Plain data: job, task, node, reason.")
      .def("__repr__", [](const EvictDecision& e) {
        return absl::StrFormat("EvictDecision(%s on %s: %s)", e.task, e.node, e.reason);
      });

  py::class_<QueueShare>(m, "QueueShare",
                         "A queue's standing at the end of a cycle: what it holds, asks for and "
                         "deserves (Resources), and its share.")
      .def_readonly("queue", &QueueShare::queue, "The queue's name.")
      .def_readonly("weight", &QueueShare::weight, "The queue's weight.")
      .def_readonly("allocated", &QueueShare::allocated, "Resources its running tasks hold.")
      .def_readonly("request", &QueueShare::request, "Resources held plus pending requests (its demand).")
      .def_readonly("deserved", &QueueShare::deserved,
                    "Its deserved resources (proportion plugin); inf when no plugin sets them.")
      .def_readonly("held", &QueueShare::held,
                    "Capacity held for this queue's starvation target (not in allocated).")
      .def_readonly("share", &QueueShare::share,
                    "Max over resources of allocated / deserved (0 when nothing is allocated).")
      .def("to_dict", &QueueShareDict,
           "Plain data: queue, weight, allocated, request, deserved, held (each cpu, memory, gpu), share.")
      .def("__repr__", [](const QueueShare& q) {
        return absl::StrFormat("QueueShare(%s, weight=%g, gpu allocated=%g deserved=%g, share=%.2f)", q.queue,
                               q.weight, q.allocated[2], q.deserved[2], q.share);
      });

  py::class_<HeldCapacity>(m, "HeldCapacity",
                           "Capacity a node holds for the starvation target at the end of a cycle: "
                           "taken, not idle.")
      .def_readonly("node", &HeldCapacity::node, "The node holding the capacity.")
      .def_readonly("job", &HeldCapacity::job, "The target job it is held for.")
      .def_readonly("resources", &HeldCapacity::resources, "The capacity held, as Resources.")
      .def_property_readonly("cpu", [](const HeldCapacity& h) { return h.resources[0]; },
                             "CPU held, in millicores.")
      .def_property_readonly("memory", [](const HeldCapacity& h) { return h.resources[1]; },
                             "Memory held, in bytes.")
      .def_property_readonly("gpu", [](const HeldCapacity& h) { return h.resources[2]; },
                             "GPUs held, in whole-GPU equivalents.")
      .def("to_dict", &HeldDict, "Plain data: cpu, memory, gpu, node, job.")
      .def("__repr__", [](const HeldCapacity& h) {
        return absl::StrFormat("HeldCapacity(%s for %s, gpu=%g)", h.node, h.job, h.resources[2]);
      });

  py::class_<NumberedCycle>(m, "CycleResult",
                            "What one scheduling cycle decided: binds, evictions, pending reasons, "
                            "queue shares and capacity held for the starvation target. Immutable.")
      .def_readonly("cycle", &NumberedCycle::cycle, "This cycle's number (0 for the first).")
      .def_property_readonly(
          "binds", [](const NumberedCycle& c) -> const std::vector<BindDecision>& { return c.result.binds; },
          kView, "Tasks bound this cycle, a list of BindDecision.")
      .def_property_readonly(
          "evictions",
          [](const NumberedCycle& c) -> const std::vector<EvictDecision>& { return c.result.evictions; }, kView,
          "Tasks evicted this cycle, a list of EvictDecision.")
      .def_property_readonly("pending", [](const NumberedCycle& c) { return c.result.pending; },
                             "Why each job short of its gang did not run: {job: reason}.")
      .def_property_readonly(
          "queues", [](const NumberedCycle& c) -> const std::vector<QueueShare>& { return c.result.queues; },
          kView, "Each queue's standing, a list of QueueShare.")
      .def_property_readonly(
          "held", [](const NumberedCycle& c) -> const std::vector<HeldCapacity>& { return c.result.held; },
          kView, "Capacity held for the target per node, a list of HeldCapacity (empty: no target).")
      .def_property_readonly("target", [](const NumberedCycle& c) { return c.result.target; },
                             "The starvation target this cycle (\"\" none), whether or not it started.")
      .def_property_readonly("held_gpus", [](const NumberedCycle& c) { return HeldGpus(c.result); },
                             "GPUs (whole-GPU equivalents) held for the target at the end of the cycle.")
      .def("to_dict", &CycleDict,
           "Plain data for JSON/YAML: cycle, binds, evictions, pending, queues, held, target.")
      .def("__repr__", [](const NumberedCycle& c) {
        return absl::StrFormat("CycleResult(cycle=%d, binds=%d, evictions=%d, pending=%d, target=%s)", c.cycle,
                               c.result.binds.size(), c.result.evictions.size(), c.result.pending.size(),
                               Quoted(c.result.target));
      });
}

void BindSummaries(py::module_& m) {
  using engine::JobState;
  py::class_<JobState>(m, "JobState", "A job's standing in the engine, read under the engine's lock.")
      .def_readonly("name", &JobState::name, "The job's name.")
      .def_readonly("queue", &JobState::queue, "The queue it belongs to.")
      .def_readonly("priority", &JobState::priority, "Its priority (higher goes first).")
      .def_readonly("min_available", &JobState::min_available, "Tasks that must run together (the gang).")
      .def_readonly("tasks", &JobState::tasks, "Number of tasks in the job.")
      .def_readonly("running", &JobState::running, "Number of its tasks running.")
      .def_readonly("admitted", &JobState::admitted, "Whether the enqueue action admitted it.")
      .def_readonly("waiting_cycles", &JobState::waiting_cycles,
                    "Consecutive cycles the job was not ready to run.")
      .def("to_dict",
           [](const JobState& j) {
             py::dict d;
             d["name"] = j.name;
             d["queue"] = j.queue;
             d["priority"] = j.priority;
             d["min_available"] = j.min_available;
             d["tasks"] = j.tasks;
             d["running"] = j.running;
             d["admitted"] = j.admitted;
             d["waiting_cycles"] = j.waiting_cycles;
             return d;
           },
           "Plain data: name, queue, priority, min_available, tasks, running, admitted, waiting_cycles.")
      .def("__repr__", [](const JobState& j) {
        return absl::StrFormat("JobState(%s, queue=%s, running=%d/%d)", j.name, j.queue, j.running, j.tasks);
      });

  using engine::Queue;
  py::class_<Queue>(m, "QueueSpec", "A queue as configured: name, weight, capability and reclaimable flag.")
      .def_readonly("name", &Queue::name, "The queue's name.")
      .def_readonly("weight", &Queue::weight, "Its weight in the proportion plugin's split.")
      .def_property_readonly("capability",
                             [](const Queue& q) { return JsonToPy(engine::QueueToJson(q)["capability"]); },
                             "Its hard limits in the spec's units ({cpu: cores, memory: bytes, gpu}); "
                             "only the limits set, empty when none.")
      .def_readonly("reclaimable", &Queue::reclaimable,
                    "Whether others may take back what exceeds its share.")
      .def_readonly("parent", &Queue::parent, "Its parent queue in a queue tree (\"\": top).")
      .def("to_dict", [](const Queue& q) { return JsonToPy(engine::QueueToJson(q)); },
           "The queue in the spec format (valid input to add_queue): name, weight, capability, reclaimable.")
      .def("__repr__", [](const Queue& q) {
        return absl::StrFormat("QueueSpec(%s, weight=%g, reclaimable=%s)", q.name, q.weight,
                               q.reclaimable ? "True" : "False");
      });
}

void BindPluginViews(py::module_& m) {
  py::class_<JobView>(m, "JobView", "A job as a Python plugin's callbacks see it (a copy taken for the call).")
      .def_readonly("name", &JobView::name, "The job's name.")
      .def_readonly("queue", &JobView::queue, "The queue it belongs to.")
      .def_readonly("priority", &JobView::priority, "Its priority (higher goes first).")
      .def_readonly("min_available", &JobView::min_available, "Tasks that must run together (the gang).")
      .def_readonly("tasks", &JobView::tasks, "Number of tasks in the job.")
      .def_readonly("occupied", &JobView::occupied, "Number of its tasks allocated or running.")
      .def_readonly("waiting_cycles", &JobView::waiting_cycles,
                    "Consecutive cycles the job was not ready to run.")
      .def_readonly("allocated", &JobView::allocated, "Resources its occupying tasks hold.")
      .def("to_dict",
           [](const JobView& j) {
             py::dict d;
             d["name"] = j.name;
             d["queue"] = j.queue;
             d["priority"] = j.priority;
             d["min_available"] = j.min_available;
             d["tasks"] = j.tasks;
             d["occupied"] = j.occupied;
             d["waiting_cycles"] = j.waiting_cycles;
             d["allocated"] = ResourcesDict(j.allocated);
             return d;
           },
           "Plain data: name, queue, priority, min_available, tasks, occupied, waiting_cycles, allocated.")
      .def("__repr__", [](const JobView& j) {
        return absl::StrFormat("JobView(%s, queue=%s, occupied=%d/%d)", j.name, j.queue, j.occupied, j.tasks);
      });

  py::class_<TaskView>(m, "TaskView", "A task as a Python plugin's callbacks see it (a copy taken for the call).")
      .def_readonly("name", &TaskView::name, "The task's pod name.")
      .def_readonly("job", &TaskView::job, "The job it belongs to.")
      .def_readonly("priority", &TaskView::priority, "The pod's priority.")
      .def_readonly("status", &TaskView::status, "The task's state: pending, allocated, running or releasing.")
      .def_readonly("node", &TaskView::node, "The node while allocated or running, else None.")
      .def_readonly("request", &TaskView::request, "What the task asks for, as Resources.")
      .def("to_dict",
           [](const TaskView& t) {
             py::dict d;
             d["name"] = t.name;
             d["job"] = t.job;
             d["priority"] = t.priority;
             d["status"] = t.status;
             d["node"] = t.node;
             d["request"] = ResourcesDict(t.request);
             return d;
           },
           "Plain data: name, job, priority, status, node, request.")
      .def("__repr__", [](const TaskView& t) {
        return absl::StrFormat("TaskView(%s, %s%s)", t.name, t.status, t.node ? " on " + *t.node : "");
      });

  py::class_<QueueView>(m, "QueueView", "A queue as a Python plugin's callbacks see it (a copy taken for the call).")
      .def_readonly("name", &QueueView::name, "The queue's name.")
      .def_readonly("weight", &QueueView::weight, "The queue's weight.")
      .def_readonly("allocated", &QueueView::allocated, "Resources its running tasks hold.")
      .def_readonly("request", &QueueView::request, "Resources held plus pending requests (its demand).")
      .def_readonly("deserved", &QueueView::deserved, "Its deserved resources; inf when no plugin sets them.")
      .def("to_dict",
           [](const QueueView& q) {
             py::dict d;
             d["name"] = q.name;
             d["weight"] = q.weight;
             d["allocated"] = ResourcesDict(q.allocated);
             d["request"] = ResourcesDict(q.request);
             d["deserved"] = ResourcesDict(q.deserved);
             return d;
           },
           "Plain data: name, weight, allocated, request, deserved.")
      .def("__repr__", [](const QueueView& q) {
        return absl::StrFormat("QueueView(%s, weight=%g, gpu allocated=%g)", q.name, q.weight, q.allocated[2]);
      });
}

}  // namespace

void InitEngineResults(py::module_& m) {
  BindResources(m);
  BindCycle(m);
  BindSummaries(m);
  BindPluginViews(m);
}

}  // namespace gpufleet::bindings
