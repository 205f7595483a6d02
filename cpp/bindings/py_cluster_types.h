// What the core's bindings share between files: the Pod conversion and the Allocation handed to
// Python (a copy of its node rides along so it can render annotations alone).
#ifndef GPUFLEET_BINDINGS_PY_CLUSTER_TYPES_H_
#define GPUFLEET_BINDINGS_PY_CLUSTER_TYPES_H_

#include <pybind11/pybind11.h>

#include "gpufleet/accounting/allocation.h"
#include "gpufleet/accounting/cluster_state.h"
#include "gpufleet/core/node.h"
#include "gpufleet/core/pod.h"
#include "gpufleet/io/spec_json.h"
#include "py_json.h"
#include "status_cast.h"

namespace gpufleet::bindings {

// A gpufleet.Pod, or a dict in the scenario format (ValueError names a bad field).
inline Pod PodFrom(const pybind11::handle& obj) {
  if (pybind11::isinstance<Pod>(obj)) return obj.cast<Pod>();
  if (pybind11::isinstance<pybind11::dict>(obj)) return Unwrap(PodFromJson(PyToJson(obj)));
  throw pybind11::type_error("pod must be a gpufleet.Pod or a dict in the scenario format");
}

struct PyAllocation {
  Allocation allocation;
  Node node;
};

inline PyAllocation Wrap(const ClusterState& s, const Allocation& a) {
  return PyAllocation{a, s.node(s.FindNode(a.node))};
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_CLUSTER_TYPES_H_
