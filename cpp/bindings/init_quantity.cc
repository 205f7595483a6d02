// Bindings for the facts the core defines once: Kubernetes quantities, the wire keys and the MIG
// geometry.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <map>
#include <string>

#include "gpufleet/core/mig.h"
#include "gpufleet/core/quantity.h"
#include "gpufleet/core/request_parser.h"
#include "gpufleet/io/annotations.h"
#include "py_ints.h"
#include "gpufleet/topology/topology.h"
#include "status_cast.h"

namespace py = pybind11;

namespace gpufleet::bindings {

void InitQuantity(py::module_& m) {
  m.def("wire_keys",
        [] {
          return std::map<std::string, std::string>{
              {"nvidia_gpu", kNvidiaGpu},
              {"koord_gpu", kKoordGpu},
              {"koord_gpu_core", kKoordGpuCore},
              {"koord_gpu_memory", kKoordGpuMemory},
              {"koord_gpu_memory_ratio", kKoordGpuMemoryRatio},
              {"koord_gpu_shared", kKoordGpuShared},
              {"koord_rdma", kKoordRdma},
              {"koord_fpga", kKoordFpga},
              {"aliyun_gpu_mem", kAliyunGpuMem},
              {"nvidia_mig_prefix", kNvidiaMigPrefix},
              {"device_allocated", kDeviceAllocatedAnnotation},
              {"gpushare_idx", kGpushareIdx},
              {"gpushare_pod", kGpusharePod},
              {"gpushare_dev", kGpushareDev},
              {"gpushare_assigned", kGpushareAssigned},
              {"gpushare_assume_time", kGpushareAssumeTime},
              {"nvlink_clique", topology::kNvlinkCliqueLabel},
              {"hostname", topology::kHostnameLabel},
          };
        },
        "The Kubernetes resource and annotation names the core reads and writes, by short name "
        "(gpufleet.k8s.keys holds the same names for Python).");
  m.def("mig_geometry",
        [] {
          py::list models;
          for (const MigModel& mm : mig_data::kModels) {
            py::list profiles, aliases;
            for (const MigProfile& p : mm.profiles) {
              py::list starts;
              for (int k = 0; k < mig_data::kMemorySlots; ++k)
                if (p.start_slots & (1u << k)) starts.append(k);
              py::dict d;
              d["name"] = std::string(p.name);
              d["nvml_profile_id"] = p.nvml_profile_id;
              d["compute_slices"] = p.compute_slices;
              d["memory_slices"] = p.memory_slices;
              d["max_instances"] = p.max_instances;
              d["start_slots"] = starts;
              profiles.append(d);
            }
            for (std::string_view a : mm.aliases)
              if (!a.empty()) aliases.append(std::string(a));
            py::dict d;
            d["model"] = std::string(mm.name);
            d["aliases"] = aliases;
            d["memory_gib"] = mm.memory_gib;
            d["compute_slices"] = mig_data::kComputeSlices;
            d["memory_slots"] = mig_data::kMemorySlots;
            d["profiles"] = profiles;
            models.append(d);
          }
          return models;
        },
        "NVIDIA MIG geometry per GPU model (from NVIDIA's MIG user guide): profiles with their "
        "compute and memory slices, instance limits and allowed start slots.");
  m.def("parse_quantity", [](const std::string& s) { return Unwrap(ParseQuantity(s)); },
        py::arg("quantity"),
        "Kubernetes quantity -> integer (bytes or count), rounded up like Kubernetes; ValueError "
        "names what is wrong.");
  m.def("parse_milli", [](const std::string& s) { return Unwrap(ParseMilli(s)); },
        py::arg("quantity"), "Kubernetes quantity -> milli-units (cpu); ValueError if malformed.");
  m.def("parse_quantity_exact", [](const std::string& s) { return Unwrap(ParseQuantityExact(s)); },
        py::arg("quantity"),
        "Kubernetes quantity -> its exact value as decimal text (\"1.5\", \"0.000000001\").");
  m.def("parse_resource_quantity",
        [](const std::string& resource, const std::string& s) {
          return Unwrap(ParseResourceQuantity(resource, s));
        },
        py::arg("resource"), py::arg("quantity"),
        "A resource's quantity in the core's unit: milli-cores for cpu, whole numbers only for "
        "pods and extended resources (nvidia.com/gpu, koordinator.sh/*, aliyun.com/gpu-mem), "
        "bytes rounded up otherwise.");
  m.def("format_bytes",
        [](py::handle bytes) {
          return FormatBytes(IntArg(bytes, "bytes", std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max()));
        },
        py::arg("bytes"),
        "Bytes with the largest binary suffix that divides them exactly (\"80Gi\", \"81559Mi\").");
}

}  // namespace gpufleet::bindings
