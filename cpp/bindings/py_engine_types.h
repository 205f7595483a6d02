// The engine's values as Python sees them: a cycle's result with its number, and the views a
// plugin written in Python receives. All are plain copies, immutable once built (Python gets
// read-only properties and no constructor), so any thread may read them while the engine moves on.
#ifndef GPUFLEET_BINDINGS_PY_ENGINE_TYPES_H_
#define GPUFLEET_BINDINGS_PY_ENGINE_TYPES_H_

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "gpufleet/engine/decisions.h"
#include "gpufleet/engine/resources.h"
#include "gpufleet/engine/session.h"

namespace gpufleet::bindings {

// One cycle's decisions and the cycle's number (taken under the engine's lock with the cycle).
struct NumberedCycle {
  int cycle = 0;
  engine::CycleResult result;
};

// A job as a Python plugin's callbacks see it, at the moment of the call.
struct JobView {
  std::string name;
  std::string queue;
  int priority = 0;
  int min_available = 0;
  int tasks = 0;
  int occupied = 0;
  int waiting_cycles = 0;
  engine::Resources allocated;
};

// A task (pod of a job) as a Python plugin's callbacks see it.
struct TaskView {
  std::string name;
  std::string job;
  int priority = 0;
  std::string status;
  std::optional<std::string> node;  // while allocated or running
  engine::Resources request;
};

// A queue as a Python plugin's callbacks see it.
struct QueueView {
  std::string name;
  double weight = 0;
  engine::Resources allocated;
  engine::Resources request;
  engine::Resources deserved;
};

inline JobView ViewOf(const engine::Session& s, const engine::JobInfo& j) {
  return JobView{j.name(), s.queues()[j.queue].name(), j.priority(), j.min_available(),
                 static_cast<int>(j.tasks.size()), j.occupied, j.waiting_cycles, j.allocated};
}

inline TaskView ViewOf(const engine::Session& s, const engine::TaskInfo& t) {
  std::optional<std::string> node;
  if (t.node >= 0) node = s.state().node(t.node).name;
  return TaskView{t.name(), s.jobs()[t.job].name(), t.pod->priority,
                  engine::TaskStatusName(t.status), std::move(node), t.request};
}

inline QueueView ViewOf(const engine::QueueInfo& q) {
  return QueueView{q.name(), q.spec->weight, q.allocated, q.request, q.deserved};
}

// Binds the classes above and the engine's result structs (init_engine_results.cc); InitEngine
// calls it before binding the scheduler that returns them.
void InitEngineResults(pybind11::module_& m);

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_ENGINE_TYPES_H_
