// How a binding takes an object's lock. The one rule that keeps the GIL and the objects' locks
// from deadlocking: a thread never waits for an object's lock while it holds the GIL. A thread
// that holds an object's lock may need the GIL (an engine plugin written in Python runs under the
// engine's lock), so waiting for the lock with the GIL held could wait forever. These helpers drop
// the GIL, take the lock, run `f` (plain C++: it builds no Python object), release the lock and
// take the GIL back; Python values are made from f's result afterwards. `f` must use no Python
// object of the caller's: the arguments are read into C++ values before these helpers are called.
// Taking the lock may raise std::system_error (a RuntimeError in Python) where waiting would close
// a ring of objects waiting for each other (see ObjectLock).
#ifndef GPUFLEET_BINDINGS_LOCKING_H_
#define GPUFLEET_BINDINGS_LOCKING_H_

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "gpufleet/accounting/object_lock.h"

namespace gpufleet::bindings {

// A call that re-enters an object from inside that object's own write (a Python plugin calling
// the engine that is running it) would wait for itself; it gets this error instead.
inline void RefuseReentry(const ObjectLock& lock, const char* what) {
  if (lock.HeldByThisThread())
    throw std::runtime_error(std::string(what) +
                             " is busy in this thread (a plugin callback cannot call back into "
                             "the engine or cluster that runs it)");
}

template <typename Guarded, typename F>
auto Reading(const Guarded& g, const char* what, F&& f) {
  RefuseReentry(g.lock(), what);
  pybind11::gil_scoped_release nogil;
  return g.Read(std::forward<F>(f));
}

template <typename Guarded, typename F>
auto Writing(Guarded& g, const char* what, F&& f) {
  RefuseReentry(g.lock(), what);
  pybind11::gil_scoped_release nogil;
  return g.Write(std::forward<F>(f));
}

// A question that asks a placement strategy: the cluster's lock shared or exclusive as the
// strategy needs (see GuardedCluster::ReadWith).
template <typename Guarded, typename Strategy, typename F>
auto Asking(const Guarded& g, const Strategy& strategy, const char* what, F&& f) {
  RefuseReentry(g.lock(), what);
  pybind11::gil_scoped_release nogil;
  return g.ReadWith(strategy, std::forward<F>(f));
}

template <typename Guarded, typename F>
auto Without(Guarded& g, const char* what, F&& f) {
  RefuseReentry(g.lock(), what);
  pybind11::gil_scoped_release nogil;
  return std::forward<F>(f)();
}

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_LOCKING_H_
