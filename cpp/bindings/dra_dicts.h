// The DRA problem's pieces as Python hands them over (dicts and lists of plain numbers, see
// gpufleet.dra.node_devices) and the answer as it goes back, shared by init_dra.cc (one problem
// in a dict) and init_dra_prepared.cc (tables, requests and holds kept apart).
#ifndef GPUFLEET_BINDINGS_DRA_DICTS_H_
#define GPUFLEET_BINDINGS_DRA_DICTS_H_

#include <pybind11/pybind11.h>

#include <vector>

#include "gpufleet/dra/problem.h"

namespace gpufleet::bindings {

dra::Amounts ToAmounts(const pybind11::handle& h);
std::vector<dra::Device> ToDevices(const pybind11::handle& list);
std::vector<dra::Request> ToRequests(const pybind11::handle& list);
std::vector<dra::Constraint> ToConstraints(const pybind11::handle& list);
pybind11::dict ScoreDict(const dra::Score& s);
pybind11::dict ResultDict(const dra::Result& r);

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_DRA_DICTS_H_
