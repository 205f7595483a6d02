// Python bindings for the openb GPU-sharing replay: columns in, NumPy arrays and the final cluster
// out. The replay runs without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <string>
#include <vector>

#include "gpufleet/placement/guarded_cluster.h"
#include "gpufleet/sim/openb_replay.h"
#include "py_arrays.h"
#include "py_json.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {
namespace {

template <typename T>
void CheckLength(const std::vector<T>& v, size_t n, const char* table, const char* column) {
  if (v.size() != n)
    throw py::value_error(std::string(table) + " column " + column + " has " +
                          std::to_string(v.size()) + " rows, expected " + std::to_string(n));
}

// A count column as the replay stores it (int): a value past int's range is a ValueError naming
// the row, not pybind11's TypeError for the whole call.
std::vector<int> IntColumn(const std::vector<int64_t>& v, const std::vector<std::string>& names,
                           const char* table, const char* column) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < std::numeric_limits<int>::min() || v[i] > std::numeric_limits<int>::max())
      throw py::value_error(std::string(table) + " row " + std::to_string(i) + " (" +
                            (i < names.size() ? names[i] : std::string("?")) + "): " + column +
                            " " + std::to_string(v[i]) + " is out of range");
    out[i] = static_cast<int>(v[i]);
  }
  return out;
}

}  // namespace

void InitReplay(py::module_& m) {
  m.def(
      "_replay_openb",
      [](const std::vector<std::string>& node_name, const std::vector<int64_t>& node_cpu,
         const std::vector<int64_t>& node_memory, const std::vector<int64_t>& node_gpus64,
         const std::vector<std::string>& node_model, const std::vector<std::string>& pod_name,
         const std::vector<int64_t>& pod_cpu, const std::vector<int64_t>& pod_memory,
         const std::vector<int64_t>& pod_gpus64, const std::vector<int64_t>& pod_milli64,
         const std::vector<std::vector<std::string>>& pod_spec, const std::string& policy,
         py::object params, uint64_t seed, double stop_at, double coverage, const std::string& ties) {
        const size_t nn = node_name.size(), np = pod_name.size();
        CheckLength(node_cpu, nn, "nodes", "cpu_milli");
        CheckLength(node_memory, nn, "nodes", "memory_mib");
        CheckLength(node_gpus64, nn, "nodes", "num_gpu");
        CheckLength(node_model, nn, "nodes", "model");
        CheckLength(pod_cpu, np, "pods", "cpu_milli");
        CheckLength(pod_memory, np, "pods", "memory_mib");
        CheckLength(pod_gpus64, np, "pods", "num_gpu");
        CheckLength(pod_milli64, np, "pods", "gpu_milli");
        const std::vector<int> node_gpus = IntColumn(node_gpus64, node_name, "nodes", "num_gpu");
        const std::vector<int> pod_gpus = IntColumn(pod_gpus64, pod_name, "pods", "num_gpu");
        const std::vector<int> pod_milli = IntColumn(pod_milli64, pod_name, "pods", "gpu_milli");
        CheckLength(pod_spec, np, "pods", "gpu_spec");
        std::vector<OpenbNode> nodes(nn);
        for (size_t i = 0; i < nn; ++i)
          nodes[i] = {node_name[i], node_cpu[i], node_memory[i], node_gpus[i], node_model[i]};
        std::vector<OpenbPod> pods(np);
        for (size_t i = 0; i < np; ++i)
          pods[i] = {pod_name[i], pod_cpu[i], pod_memory[i], pod_gpus[i], pod_milli[i], pod_spec[i]};
        OpenbReplayOptions o;
        o.policy = policy;
        if (!params.is_none()) {
          try {
            o.params = PyToJson(params);
          } catch (const std::exception& e) {
            throw py::value_error(std::string("replay: parameters are not JSON: ") + e.what());
          }
        }
        o.seed = seed;
        o.stop_at = stop_at;
        o.coverage = coverage;
        if (ties == "seeded") {
          o.ties = OpenbTies::kSeededOrder;
        } else if (ties == "name") {
          o.ties = OpenbTies::kName;
        } else if (ties == "random") {
          o.ties = OpenbTies::kRandom;
        } else {
          throw py::value_error("replay: ties must be 'seeded', 'name' or 'random', got '" + ties +
                                "'");
        }
        absl::StatusOr<OpenbReplayResult> r;
        {
          py::gil_scoped_release release;
          r = ReplayOpenb(nodes, pods, o);
        }
        OpenbReplayResult res = Unwrap(std::move(r));
        py::dict out;
        out["pod"] = ToArray(res.pod);
        out["placed"] = ToArray(res.placed);
        out["node"] = ToArray(res.node);
        out["arrived"] = ToArray(res.arrived);
        out["allocated"] = ToArray(res.allocated);
        out["fragmented"] = ToArray(res.fragmented);
        out["idle"] = ToArray(res.idle);
        out["failed"] = ToArray(res.failed);
        out["failed_gpu"] = ToArray(res.failed_gpu);
        out["gpu_capacity"] = res.gpu_capacity / 100;
        out["workload"] = JsonToPy(res.workload.ToJson());
        out["cluster"] = py::cast(GuardedCluster(std::move(res.cluster)));  // its own lock
        return out;
      },
      py::arg("node_name"), py::arg("node_cpu"), py::arg("node_memory"), py::arg("node_gpus"),
      py::arg("node_model"), py::arg("pod_name"), py::arg("pod_cpu"), py::arg("pod_memory"),
      py::arg("pod_gpus"), py::arg("pod_milli"), py::arg("pod_spec"), py::arg("policy"),
      py::arg("params"), py::arg("seed"), py::arg("stop_at"), py::arg("coverage"),
      py::arg("ties"),
      "Native openb replay over column lists; use gpufleet.replay.replay_openb.");
}

}  // namespace gpufleet::bindings
