// Python bindings for the openb GPU-sharing replay: columns in, a bound OpenbReplayRun out (one
// NumPy column per arrival series, the typical-pod workload, the final cluster). The replay runs
// without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/sim/openb_replay.h"
#include "py_arrays.h"
#include "py_ints.h"
#include "py_json.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

template <typename T>
void CheckLength(const std::vector<T>& v, size_t n, const char* table, const char* column) {
  if (v.size() != n)
    throw InvalidInput(std::string(table) + " column " + column + " has " +
                          std::to_string(v.size()) + " rows, expected " + std::to_string(n));
}

// A count column as the replay stores it (int): a value past int's range is a ValueError naming
// the row, not pybind11's TypeError for the whole call.
std::vector<int> IntColumn(const std::vector<int64_t>& v, const std::vector<std::string>& names,
                           const char* table, const char* column) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < std::numeric_limits<int>::min() || v[i] > std::numeric_limits<int>::max())
      throw InvalidInput(std::string(table) + " row " + std::to_string(i) + " (" +
                            (i < names.size() ? names[i] : std::string("?")) + "): " + column +
                            " " + std::to_string(v[i]) + " is out of range");
    out[i] = static_cast<int>(v[i]);
  }
  return out;
}

// One replay as Python receives it: the per-arrival series (the final state moved into a Cluster
// of its own, with its own lock). Immutable once built.
struct ReplayRun {
  OpenbReplayResult result;  // its `cluster` is moved out into `cluster`
  py::object cluster;        // a gpufleet Cluster
};

// One per-arrival column: name, help, and the series. A new column is one line.
struct ReplayColumn {
  const char* name;
  const char* doc;
  py::array (*make)(const OpenbReplayResult&);
};

const ReplayColumn kReplayColumns[] = {
    {"pod", "Row of the input pods (resampled pods repeat a row).",
     [](const OpenbReplayResult& r) -> py::array { return ToArray(r.pod); }},
    {"placed", "1 placed, 0 failed.", [](const OpenbReplayResult& r) -> py::array { return ToArray(r.placed); }},
    {"node", "Row of the input nodes the pod went to, -1 when it failed.",
     [](const OpenbReplayResult& r) -> py::array { return ToArray(r.node); }},
    {"arrived", "Arrived GPU requests / cluster GPUs.",
     [](const OpenbReplayResult& r) -> py::array { return ToArray(r.arrived); }},
    {"allocated", "Allocated GPU share / cluster GPUs.",
     [](const OpenbReplayResult& r) -> py::array { return ToArray(r.allocated); }},
    {"fragmented", "Fragmented free GPU share / cluster GPUs (against the typical pods).",
     [](const OpenbReplayResult& r) -> py::array { return ToArray(r.fragmented); }},
    {"idle", "Free GPU share / cluster GPUs.", [](const OpenbReplayResult& r) -> py::array { return ToArray(r.idle); }},
    {"failed", "Failed pods so far.", [](const OpenbReplayResult& r) -> py::array { return ToArray(r.failed); }},
    {"failed_gpu", "GPU requests of the failed pods so far / cluster GPUs.",
     [](const OpenbReplayResult& r) -> py::array { return ToArray(r.failed_gpu); }},
};

void BindReplayRun(py::module_& m) {
  py::class_<ReplayRun, std::shared_ptr<ReplayRun>> cls(
      m, "OpenbReplayRun",
      "What the native openb replay returns (gpufleet.replay.replay_openb shapes it into a "
      "ReplayResult): one NumPy column per series with a row per arrival (each access a fresh "
      "copy), the cluster's GPUs, the typical-pod workload and the final cluster. Immutable.");
  for (const ReplayColumn& c : kReplayColumns) {
    auto make = c.make;
    cls.def_property_readonly(c.name, [make](const ReplayRun& r) { return make(r.result); }, c.doc);
  }
  cls.def_property_readonly("gpu_capacity", [](const ReplayRun& r) { return r.result.gpu_capacity / 100; },
                            "GPUs in the cluster.")
      .def_property_readonly("workload", [](const ReplayRun& r) { return JsonToPy(r.result.workload.ToJson()); },
                             "The typical pods fgd and the fragmentation measure used, as plain data.")
      .def_readonly("cluster", &ReplayRun::cluster, "The final state, a Cluster of its own.")
      .def_property_readonly_static(
          "columns",
          [](const py::object&) {
            std::vector<std::string> names;
            for (const ReplayColumn& c : kReplayColumns) names.push_back(c.name);
            return names;
          },
          "The per-arrival column names, in to_dict's order.")
      .def("__len__", [](const ReplayRun& r) { return r.result.pod.size(); }, "Number of arrivals.")
      .def(
          "to_dict",
          [](const ReplayRun& r) {
            py::dict d;
            for (const ReplayColumn& c : kReplayColumns) d[c.name] = c.make(r.result);
            d["gpu_capacity"] = r.result.gpu_capacity / 100;
            d["workload"] = JsonToPy(r.result.workload.ToJson());
            return d;
          },
          "Plain data: every per-arrival column by name, gpu_capacity and workload (not the cluster; "
          "its snapshot() serialises it).")
      .def("__repr__", [](const ReplayRun& r) {
        const OpenbReplayResult& x = r.result;
        const int64_t failed = x.failed.empty() ? 0 : x.failed.back();
        return absl::StrFormat("OpenbReplayRun(arrivals=%d, failed=%d, gpu_capacity=%d, allocated=%.4f)",
                               x.pod.size(), failed, x.gpu_capacity / 100,
                               x.allocated.empty() ? 0.0 : x.allocated.back());
      });
}

// A table of named columns (a dict, as a DataFrame's columns come): one column, as `T`.
template <typename T>
std::vector<T> ColumnOf(const py::dict& table, const char* table_name, const char* column) {
  if (!table.contains(column))
    throw InvalidInput(std::string(table_name) + ": no column " + column);
  try {
    return table[column].cast<std::vector<T>>();
  } catch (const py::cast_error&) {
    throw InvalidInput(std::string(table_name) + " column " + column + ": expected a list of " +
                       (std::is_same_v<T, std::string> ? "strings" : "whole numbers"));
  }
}

const char* TiesName(OpenbTies ties) {
  switch (ties) {
    case OpenbTies::kSeededOrder: return "seeded";
    case OpenbTies::kName: return "name";
    case OpenbTies::kRandom: return "random";
  }
  return "seeded";
}

OpenbReplayOptions MakeOptions(const std::string& policy, py::object params, py::handle seed_arg,
                               double stop_at, double coverage, const std::string& ties) {
  OpenbReplayOptions o;
  o.policy = policy;
  if (!params.is_none()) {
    try {
      o.params = PyToJson(params);
    } catch (const std::exception& e) {
      throw InvalidInput(std::string("replay: parameters are not JSON: ") + e.what());
    }
  }
  o.seed = static_cast<uint64_t>(IntArg(seed_arg, "seed", 0, std::numeric_limits<int64_t>::max()));
  o.stop_at = stop_at;
  o.coverage = coverage;
  if (ties == "seeded") {
    o.ties = OpenbTies::kSeededOrder;
  } else if (ties == "name") {
    o.ties = OpenbTies::kName;
  } else if (ties == "random") {
    o.ties = OpenbTies::kRandom;
  } else {
    throw InvalidInput("replay: ties must be 'seeded', 'name' or 'random', got '" + ties + "'");
  }
  return o;
}

std::shared_ptr<ReplayRun> RunReplay(const py::dict& node_table, const py::dict& pod_table,
                                  const OpenbReplayOptions& options) {
  const auto node_name = ColumnOf<std::string>(node_table, "nodes", "name");
  const auto node_cpu = ColumnOf<int64_t>(node_table, "nodes", "cpu_milli");
  const auto node_memory = ColumnOf<int64_t>(node_table, "nodes", "memory_mib");
  const auto node_gpus64 = ColumnOf<int64_t>(node_table, "nodes", "num_gpu");
  const auto node_model = ColumnOf<std::string>(node_table, "nodes", "model");
  const auto pod_name = ColumnOf<std::string>(pod_table, "pods", "name");
  const auto pod_cpu = ColumnOf<int64_t>(pod_table, "pods", "cpu_milli");
  const auto pod_memory = ColumnOf<int64_t>(pod_table, "pods", "memory_mib");
  const auto pod_gpus64 = ColumnOf<int64_t>(pod_table, "pods", "num_gpu");
  const auto pod_milli64 = ColumnOf<int64_t>(pod_table, "pods", "gpu_milli");
  const auto pod_spec = ColumnOf<std::vector<std::string>>(pod_table, "pods", "gpu_spec");
  const size_t nn = node_name.size(), np = pod_name.size();
  CheckLength(node_cpu, nn, "nodes", "cpu_milli");
  CheckLength(node_memory, nn, "nodes", "memory_mib");
  CheckLength(node_gpus64, nn, "nodes", "num_gpu");
  CheckLength(node_model, nn, "nodes", "model");
  CheckLength(pod_cpu, np, "pods", "cpu_milli");
  CheckLength(pod_memory, np, "pods", "memory_mib");
  CheckLength(pod_gpus64, np, "pods", "num_gpu");
  CheckLength(pod_milli64, np, "pods", "gpu_milli");
  CheckLength(pod_spec, np, "pods", "gpu_spec");
  const std::vector<int> node_gpus = IntColumn(node_gpus64, node_name, "nodes", "num_gpu");
  const std::vector<int> pod_gpus = IntColumn(pod_gpus64, pod_name, "pods", "num_gpu");
  const std::vector<int> pod_milli = IntColumn(pod_milli64, pod_name, "pods", "gpu_milli");
  std::vector<OpenbNode> nodes(nn);
  for (size_t i = 0; i < nn; ++i)
    nodes[i] = {node_name[i], node_cpu[i], node_memory[i], node_gpus[i], node_model[i]};
  std::vector<OpenbPod> pods(np);
  for (size_t i = 0; i < np; ++i)
    pods[i] = {pod_name[i], pod_cpu[i], pod_memory[i], pod_gpus[i], pod_milli[i], pod_spec[i]};
  absl::StatusOr<OpenbReplayResult> r;
  {
    py::gil_scoped_release release;
    r = ReplayOpenb(nodes, pods, options);
  }
  auto run = std::make_shared<ReplayRun>();
  run->result = Unwrap(std::move(r));
  run->cluster = py::cast(GuardedCluster(std::move(run->result.cluster)));  // its own lock
  return run;
}

void BindReplayOptions(py::module_& m) {
  py::class_<OpenbReplayOptions>(m, "ReplayOptions",
                                 "How the openb replay runs: the placement strategy and its "
                                 "parameters, the seed, when arrivals stop, the typical pods' "
                                 "coverage and the tie rule. Checked when made; immutable.")
      .def(py::init(&MakeOptions), py::kw_only(), py::arg("policy") = "fgd",
           py::arg("params") = py::none(), py::arg("seed") = py::int_(0), py::arg("stop_at") = 1.3,
           py::arg("coverage") = 0.95, py::arg("ties") = "seeded")
      .def_readonly("policy", &OpenbReplayOptions::policy, "A registered placement strategy's name.")
      .def_property_readonly("params", [](const OpenbReplayOptions& o) { return JsonToPy(o.params); },
                             "The strategy's parameters (a dict).")
      .def_readonly("seed", &OpenbReplayOptions::seed,
                    "Seeds the arrival order, the resampling and the tie order.")
      .def_readonly("stop_at", &OpenbReplayOptions::stop_at,
                    "Arrived GPU requests / cluster GPUs at which arrivals stop.")
      .def_readonly("coverage", &OpenbReplayOptions::coverage,
                    "Share of the pods the typical-pod workload covers.")
      .def_property_readonly("ties", [](const OpenbReplayOptions& o) { return TiesName(o.ties); },
                             "Which of equally scored nodes a pod takes: seeded, name or random.")
      .def("__repr__", [](const OpenbReplayOptions& o) {
        return absl::StrFormat("ReplayOptions(policy=%s, seed=%d, stop_at=%g, coverage=%g, ties=%s)",
                               o.policy, o.seed, o.stop_at, o.coverage, TiesName(o.ties));
      });
}

}  // namespace

void InitReplay(py::module_& m) {
  BindReplayRun(m);
  BindReplayOptions(m);
  m.def("_replay_openb", &RunReplay, py::arg("nodes"), py::arg("pods"), py::arg("options"),
        "Native openb replay; use gpufleet.replay.replay_openb. `nodes` has the columns name, "
        "cpu_milli, memory_mib, num_gpu and model; `pods` name, cpu_milli, memory_mib, num_gpu, "
        "gpu_milli and gpu_spec (a list of GPU models per pod), each a list.");
}

}  // namespace gpufleet::bindings
