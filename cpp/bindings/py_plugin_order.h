// An order callback of a plugin written in Python, made consistent for the sorts that call it.
// The engine sorts jobs, tasks and queues with std::stable_sort, whose insertion step walks
// without a bounds check, trusting the comparator to answer the same pair the same way each time;
// a Python comparator that does not (random, or one that keeps state) could walk it past the
// array's start. So each answer is remembered with the two views it was given: the same pair
// with the same views gets the same answer, the reversed pair the opposite one, and a pair whose
// views changed since (a task was placed) is asked again. An id compared with itself is equal
// without asking.
#ifndef GPUFLEET_BINDINGS_PY_PLUGIN_ORDER_H_
#define GPUFLEET_BINDINGS_PY_PLUGIN_ORDER_H_

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "py_engine_types.h"

namespace gpufleet::bindings {

// Bitwise, so a NaN in a view compares equal to itself and cannot defeat the memo.
inline bool SameResources(const engine::Resources& a, const engine::Resources& b) {
  return std::memcmp(a.v.data(), b.v.data(), sizeof(a.v)) == 0;
}

inline bool SameView(const JobView& a, const JobView& b) {
  return a.name == b.name && a.queue == b.queue && a.priority == b.priority &&
         a.min_available == b.min_available && a.tasks == b.tasks && a.occupied == b.occupied &&
         a.waiting_cycles == b.waiting_cycles && SameResources(a.allocated, b.allocated);
}

inline bool SameView(const TaskView& a, const TaskView& b) {
  return a.name == b.name && a.job == b.job && a.priority == b.priority && a.status == b.status &&
         a.node == b.node && SameResources(a.request, b.request);
}

inline bool SameView(const QueueView& a, const QueueView& b) {
  return a.name == b.name && std::memcmp(&a.weight, &b.weight, sizeof(a.weight)) == 0 &&
         SameResources(a.allocated, b.allocated) && SameResources(a.request, b.request) &&
         SameResources(a.deserved, b.deserved);
}

template <typename View>
class ConsistentOrder {
 public:
  // -1, 0 or 1 for `a` against `b`; `ask()` puts the question to Python (views va, vb).
  template <typename Ask>
  int Compare(int a, const View& va, int b, const View& vb, Ask&& ask) {
    if (a == b) return 0;
    const bool swapped = b < a;
    const View& low = swapped ? vb : va;
    const View& high = swapped ? va : vb;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(swapped ? b : a)) << 32) |
                         static_cast<uint32_t>(swapped ? a : b);
    auto it = answers_.find(key);
    if (it == answers_.end() || !SameView(it->second.low, low) || !SameView(it->second.high, high)) {
      const int sign = std::forward<Ask>(ask)();
      answers_.insert_or_assign(key, Answer{low, high, swapped ? -sign : sign});
      return sign;
    }
    return swapped ? -it->second.sign : it->second.sign;
  }

 private:
  struct Answer {
    View low, high;
    int sign;  // the lower id against the higher
  };
  absl::flat_hash_map<uint64_t, Answer> answers_;
};

}  // namespace gpufleet::bindings

#endif  // GPUFLEET_BINDINGS_PY_PLUGIN_ORDER_H_
