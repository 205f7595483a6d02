// The engine's results as bound classes: what a cycle decided (CycleResult with its BindDecision,
// EvictDecision, QueueShare and HeldCapacity rows), job and queue summaries (JobState, QueueSpec)
// and the views Python plugins receive (JobView, TaskView, QueueView). Each is an immutable copy:
// read-only properties, no constructor from Python, nested values returned as views that keep
// their owner alive. Each class's fields are one table (py_fields.h) that gives its properties,
// `to_dict()` (plain data for JSON/YAML, keys in the table's order) and `fields`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/engine/queue.h"
#include "gpufleet/engine/scheduler.h"
#include "gpufleet/engine/spec_json.h"
#include "py_engine_types.h"
#include "py_fields.h"
#include "py_json.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

using engine::BindDecision;
using engine::EvictDecision;
using engine::HeldCapacity;
using engine::QueueShare;
using engine::Resources;

std::string Quoted(const std::string& s) { return py::repr(py::str(s)).cast<std::string>(); }

const Field<Resources> kResourcesFields[] = {
    {"cpu", "CPU in millicores.", [](const Resources& r, py::handle) { return FieldCopy(r[0]); }},
    {"memory", "Memory in bytes.", [](const Resources& r, py::handle) { return FieldCopy(r[1]); }},
    {"gpu", "GPUs in whole-GPU equivalents.", [](const Resources& r, py::handle) { return FieldCopy(r[2]); }},
};

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

// A bind's devices as plain data: type, minor, core, memory_bytes.
py::object DevicesList(const BindDecision& b) {
  py::list out;
  for (const DeviceGrant& g : b.allocation.devices) {
    py::dict d;
    d["type"] = g.type;
    d["minor"] = g.minor;
    d["core"] = g.core;
    d["memory_bytes"] = g.memory_bytes;
    out.append(d);
  }
  return out;
}

const Field<BindDecision> kBindFields[] = {
    {"node", "The node the task is bound to.",
     [](const BindDecision& b, py::handle) { return FieldCopy(b.allocation.node); }},
    {"cpu_milli", "CPU held, in millicores.",
     [](const BindDecision& b, py::handle) { return FieldCopy(b.allocation.cpu_milli); }},
    {"memory_bytes", "Memory held, in bytes.",
     [](const BindDecision& b, py::handle) { return FieldCopy(b.allocation.memory_bytes); }},
    {"devices", "The devices held, a list of DeviceGrant (in to_dict: type, minor, core, memory_bytes).",
     [](const BindDecision& b, py::handle self) { return FieldView(b.allocation.devices, self); },
     FieldKind::kStored, &DevicesList},
    {"job", "The job the task belongs to.", [](const BindDecision& b, py::handle) { return FieldCopy(b.job); }},
    {"task", "The task's pod name.", [](const BindDecision& b, py::handle) { return FieldCopy(b.task); }},
    {"gpus", "Minor numbers of the GPUs held, in grant order.",
     [](const BindDecision& b, py::handle) { return FieldCopy(GpuMinors(b)); }, FieldKind::kDerived},
    {"gpu_core", "GPU compute held, in percent of one GPU summed over its GPUs.",
     [](const BindDecision& b, py::handle) { return FieldCopy(GpuCore(b)); }, FieldKind::kDerived},
};

const Field<EvictDecision> kEvictFields[] = {
    {"job", "The job the task belongs to.", [](const EvictDecision& e, py::handle) { return FieldCopy(e.job); }},
    {"task", "The evicted task's pod name.", [](const EvictDecision& e, py::handle) { return FieldCopy(e.task); }},
    {"node", "The node it was running on.", [](const EvictDecision& e, py::handle) { return FieldCopy(e.node); }},
    {"reason", "Why it was evicted (e.g. preempted by task x, reclaimed for queue y).",
     [](const EvictDecision& e, py::handle) { return FieldCopy(e.reason); }},
};

const Field<QueueShare> kQueueShareFields[] = {
    {"queue", "The queue's name.", [](const QueueShare& q, py::handle) { return FieldCopy(q.queue); }},
    {"weight", "The queue's weight.", [](const QueueShare& q, py::handle) { return FieldCopy(q.weight); }},
    {"allocated", "Resources its own jobs' running tasks hold (0 for an inner queue: only leaves hold jobs).",
     [](const QueueShare& q, py::handle self) { return FieldView(q.allocated, self); }},
    {"subtree_allocated", "Resources the running tasks of its jobs and of every queue below it hold.",
     [](const QueueShare& q, py::handle self) { return FieldView(q.subtree_allocated, self); }},
    {"request", "Resources held plus pending requests (its demand).",
     [](const QueueShare& q, py::handle self) { return FieldView(q.request, self); }},
    {"deserved", "Its deserved resources (proportion plugin); inf when no plugin sets them.",
     [](const QueueShare& q, py::handle self) { return FieldView(q.deserved, self); }},
    {"held", "Capacity held for this queue's starvation target (not in allocated).",
     [](const QueueShare& q, py::handle self) { return FieldView(q.held, self); }},
    {"share", "Max over resources of subtree_allocated / deserved (0 when nothing is allocated).",
     [](const QueueShare& q, py::handle) { return FieldCopy(q.share); }},
};

const Field<HeldCapacity> kHeldFields[] = {
    {"cpu", "CPU held, in millicores.", [](const HeldCapacity& h, py::handle) { return FieldCopy(h.resources[0]); }},
    {"memory", "Memory held, in bytes.", [](const HeldCapacity& h, py::handle) { return FieldCopy(h.resources[1]); }},
    {"gpu", "GPUs held, in whole-GPU equivalents.",
     [](const HeldCapacity& h, py::handle) { return FieldCopy(h.resources[2]); }},
    {"node", "The node holding the capacity.", [](const HeldCapacity& h, py::handle) { return FieldCopy(h.node); }},
    {"job", "The target job it is held for.", [](const HeldCapacity& h, py::handle) { return FieldCopy(h.job); }},
    {"resources", "The capacity held (cpu, memory, gpu) as Resources.",
     [](const HeldCapacity& h, py::handle self) { return FieldView(h.resources, self); }, FieldKind::kDerived},
};

double HeldGpus(const engine::CycleResult& r) {
  double sum = 0;
  for (const HeldCapacity& h : r.held) sum += h.resources[2];
  return sum;
}

const Field<NumberedCycle> kCycleFields[] = {
    {"cycle", "This cycle's number (0 for the first).",
     [](const NumberedCycle& c, py::handle) { return FieldCopy(c.cycle); }},
    {"binds", "Tasks bound this cycle, a list of BindDecision.",
     [](const NumberedCycle& c, py::handle self) { return FieldView(c.result.binds, self); }},
    {"evictions", "Tasks evicted this cycle, a list of EvictDecision.",
     [](const NumberedCycle& c, py::handle self) { return FieldView(c.result.evictions, self); }},
    {"pending", "Why each job short of its gang did not run: {job: reason}.",
     [](const NumberedCycle& c, py::handle) { return FieldCopy(c.result.pending); }},
    {"queues", "Each queue's standing, a list of QueueShare.",
     [](const NumberedCycle& c, py::handle self) { return FieldView(c.result.queues, self); }},
    {"held", "Capacity held for the target per node, a list of HeldCapacity (empty: no target).",
     [](const NumberedCycle& c, py::handle self) { return FieldView(c.result.held, self); }},
    {"target", "The starvation target this cycle (\"\" none), whether or not it started.",
     [](const NumberedCycle& c, py::handle) { return FieldCopy(c.result.target); }},
    {"held_gpus", "GPUs (whole-GPU equivalents) held for the target at the end of the cycle.",
     [](const NumberedCycle& c, py::handle) { return FieldCopy(HeldGpus(c.result)); }, FieldKind::kDerived},
};

using engine::JobState;
const Field<JobState> kJobStateFields[] = {
    {"name", "The job's name.", [](const JobState& j, py::handle) { return FieldCopy(j.name); }},
    {"queue", "The queue it belongs to.", [](const JobState& j, py::handle) { return FieldCopy(j.queue); }},
    {"priority", "Its priority (higher goes first).", [](const JobState& j, py::handle) { return FieldCopy(j.priority); }},
    {"min_available", "Tasks that must run together (the gang).",
     [](const JobState& j, py::handle) { return FieldCopy(j.min_available); }},
    {"tasks", "Number of tasks in the job.", [](const JobState& j, py::handle) { return FieldCopy(j.tasks); }},
    {"running", "Number of its tasks running.", [](const JobState& j, py::handle) { return FieldCopy(j.running); }},
    {"admitted", "Whether the enqueue action admitted it.",
     [](const JobState& j, py::handle) { return FieldCopy(j.admitted); }},
    {"waiting_cycles", "Consecutive cycles the job was not ready to run.",
     [](const JobState& j, py::handle) { return FieldCopy(j.waiting_cycles); }},
};

const Field<JobView> kJobViewFields[] = {
    {"name", "The job's name.", [](const JobView& j, py::handle) { return FieldCopy(j.name); }},
    {"queue", "The queue it belongs to.", [](const JobView& j, py::handle) { return FieldCopy(j.queue); }},
    {"priority", "Its priority (higher goes first).", [](const JobView& j, py::handle) { return FieldCopy(j.priority); }},
    {"min_available", "Tasks that must run together (the gang).",
     [](const JobView& j, py::handle) { return FieldCopy(j.min_available); }},
    {"tasks", "Number of tasks in the job.", [](const JobView& j, py::handle) { return FieldCopy(j.tasks); }},
    {"occupied", "Number of its tasks allocated or running.",
     [](const JobView& j, py::handle) { return FieldCopy(j.occupied); }},
    {"waiting_cycles", "Consecutive cycles the job was not ready to run.",
     [](const JobView& j, py::handle) { return FieldCopy(j.waiting_cycles); }},
    {"allocated", "Resources its occupying tasks hold.",
     [](const JobView& j, py::handle self) { return FieldView(j.allocated, self); }},
};

const Field<TaskView> kTaskViewFields[] = {
    {"name", "The task's pod name.", [](const TaskView& t, py::handle) { return FieldCopy(t.name); }},
    {"job", "The job it belongs to.", [](const TaskView& t, py::handle) { return FieldCopy(t.job); }},
    {"priority", "The pod's priority.", [](const TaskView& t, py::handle) { return FieldCopy(t.priority); }},
    {"status", "The task's state: pending, allocated, running or releasing.",
     [](const TaskView& t, py::handle) { return FieldCopy(t.status); }},
    {"node", "The node while allocated or running, else None.",
     [](const TaskView& t, py::handle) { return FieldCopy(t.node); }},
    {"request", "What the task asks for, as Resources.",
     [](const TaskView& t, py::handle self) { return FieldView(t.request, self); }},
};

const Field<QueueView> kQueueViewFields[] = {
    {"name", "The queue's name.", [](const QueueView& q, py::handle) { return FieldCopy(q.name); }},
    {"weight", "The queue's weight.", [](const QueueView& q, py::handle) { return FieldCopy(q.weight); }},
    {"allocated", "Resources its running tasks hold.",
     [](const QueueView& q, py::handle self) { return FieldView(q.allocated, self); }},
    {"request", "Resources held plus pending requests (its demand).",
     [](const QueueView& q, py::handle self) { return FieldView(q.request, self); }},
    {"deserved", "Its deserved resources; inf when no plugin sets them.",
     [](const QueueView& q, py::handle self) { return FieldView(q.deserved, self); }},
};

void BindCycle(py::module_& m) {
  py::class_<Resources> resources(m, "Resources",
                                  "A fairness vector: cpu in millicores, memory in bytes and gpu in "
                                  "whole-GPU equivalents (a 50% share counts 0.5); inf means unlimited.");
  BindFields(resources, kResourcesFields);
  resources.def("__repr__", [](const Resources& r) {
    return absl::StrFormat("Resources(cpu=%g, memory=%g, gpu=%g)", r[0], r[1], r[2]);
  });

  py::class_<BindDecision> bind(m, "BindDecision",
                                "A task the cycle bound: its job, the node and what it holds there "
                                "(CPU, memory and the devices).");
  BindFields(bind, kBindFields);
  bind.def("__repr__", [](const BindDecision& b) {
    std::string devices;
    for (const DeviceGrant& g : b.allocation.devices)
      devices += absl::StrFormat("%s%s%d:%d%%", devices.empty() ? "" : ",", g.type, g.minor, g.core);
    return absl::StrFormat("BindDecision(%s -> %s, devices=[%s])", b.task, b.allocation.node, devices);
  });

  py::class_<EvictDecision> evict(m, "EvictDecision", "A running task the cycle evicted, and why.");
  BindFields(evict, kEvictFields);
  evict.def("__repr__", [](const EvictDecision& e) {
    return absl::StrFormat("EvictDecision(%s on %s: %s)", e.task, e.node, e.reason);
  });

  py::class_<QueueShare> share(m, "QueueShare",
                               "A queue's standing at the end of a cycle: what it holds, asks for and "
                               "deserves (Resources), and its share.");
  BindFields(share, kQueueShareFields);
  share.def("__repr__", [](const QueueShare& q) {
    return absl::StrFormat("QueueShare(%s, weight=%g, gpu allocated=%g deserved=%g, share=%.2f)", q.queue,
                           q.weight, q.allocated[2], q.deserved[2], q.share);
  });

  py::class_<HeldCapacity> held(m, "HeldCapacity",
                                "Capacity a node holds for the starvation target at the end of a cycle: "
                                "taken, not idle.");
  BindFields(held, kHeldFields);
  held.def("__repr__", [](const HeldCapacity& h) {
    return absl::StrFormat("HeldCapacity(%s for %s, gpu=%g)", h.node, h.job, h.resources[2]);
  });

  py::class_<NumberedCycle> cycle(m, "CycleResult",
                                  "What one scheduling cycle decided: binds, evictions, pending reasons, "
                                  "queue shares and capacity held for the starvation target. Immutable.");
  BindFields(cycle, kCycleFields);
  cycle.def("__repr__", [](const NumberedCycle& c) {
    return absl::StrFormat("CycleResult(cycle=%d, binds=%d, evictions=%d, pending=%d, target=%s)", c.cycle,
                           c.result.binds.size(), c.result.evictions.size(), c.result.pending.size(),
                           Quoted(c.result.target));
  });
}

void BindSummaries(py::module_& m) {
  py::class_<JobState> job(m, "JobState", "A job's standing in the engine, read under the engine's lock.");
  BindFields(job, kJobStateFields);
  job.def("__repr__", [](const JobState& j) {
    return absl::StrFormat("JobState(%s, queue=%s, running=%d/%d)", j.name, j.queue, j.running, j.tasks);
  });

  // A queue's to_dict() is its spec (valid input to add_queue), not a table of its properties.
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
           "The queue in the spec format (valid input to add_queue): name, weight, capability, "
           "reclaimable, and parent and quotas when set.")
      .def("__repr__", [](const Queue& q) {
        return absl::StrFormat("QueueSpec(%s, weight=%g, reclaimable=%s)", q.name, q.weight,
                               q.reclaimable ? "True" : "False");
      });
}

void BindPluginViews(py::module_& m) {
  py::class_<JobView> job(m, "JobView", "A job as a Python plugin's callbacks see it (a copy taken for the call).");
  BindFields(job, kJobViewFields);
  job.def("__repr__", [](const JobView& j) {
    return absl::StrFormat("JobView(%s, queue=%s, occupied=%d/%d)", j.name, j.queue, j.occupied, j.tasks);
  });

  py::class_<TaskView> task(m, "TaskView", "A task as a Python plugin's callbacks see it (a copy taken for the call).");
  BindFields(task, kTaskViewFields);
  task.def("__repr__", [](const TaskView& t) {
    return absl::StrFormat("TaskView(%s, %s%s)", t.name, t.status, t.node ? " on " + *t.node : "");
  });

  py::class_<QueueView> queue(m, "QueueView",
                              "A queue as a Python plugin's callbacks see it (a copy taken for the call).");
  BindFields(queue, kQueueViewFields);
  queue.def("__repr__", [](const QueueView& q) {
    return absl::StrFormat("QueueView(%s, weight=%g, gpu allocated=%g)", q.name, q.weight, q.allocated[2]);
  });
}

}  // namespace

void InitEngineResults(py::module_& m) {
  BindCycle(m);
  BindSummaries(m);
  BindPluginViews(m);
}

}  // namespace gpufleet::bindings
