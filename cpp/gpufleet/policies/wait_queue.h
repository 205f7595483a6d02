// Waiting jobs of a least-attained-service queue, kept between scheduling points: a waiting job's
// attained service does not move, so its priority is fixed until it runs again. One ordered set
// per GPU count lets a greedy fill visit only the jobs that can still fit.
#ifndef GPUFLEET_POLICIES_WAIT_QUEUE_H_
#define GPUFLEET_POLICIES_WAIT_QUEUE_H_

#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace gpufleet::jobtime {

// Priority of a job inside its queue: (service, submit time, index), smaller first.
struct WaitKey {
  double service;
  double submit;
  int job;
  bool operator<(const WaitKey& o) const {
    return std::tie(service, submit, job) < std::tie(o.service, o.submit, o.job);
  }
};

class WaitQueue {
 public:
  void Insert(int gpus, const WaitKey& k) {
    by_gpus_[gpus].insert(k);
    ++size_;
  }
  void Erase(int gpus, const WaitKey& k) {
    auto it = by_gpus_.find(gpus);
    size_ -= it->second.erase(k);
    if (it->second.empty()) by_gpus_.erase(it);
  }
  void Clear() {
    by_gpus_.clear();
    size_ = 0;
  }
  size_t size() const { return size_; }

  // Visits the jobs in WaitKey order, leaving out those asking for more GPUs than `limit()` (the
  // most free GPUs of any model, re-read after each visit; it must not grow during a walk): they
  // could not be placed at their turn. Stops when `visit` returns false. `visit` must not change
  // the queue.
  template <class Limit, class Visit>
  void Walk(Limit limit, Visit visit) const {
    struct Cursor {
      int gpus;
      std::set<WaitKey>::const_iterator it, end;
    };
    std::vector<Cursor> cursors;
    for (const auto& [gpus, keys] : by_gpus_) cursors.push_back({gpus, keys.begin(), keys.end()});
    const WaitKey* last = nullptr;
    while (true) {
      const int lim = limit();
      Cursor* best = nullptr;
      for (Cursor& c : cursors) {
        if (c.gpus > lim) break;  // ascending GPU counts
        if (last != nullptr)
          while (c.it != c.end && !(*last < *c.it)) ++c.it;  // passed while it could not fit
        if (c.it != c.end && (best == nullptr || *c.it < *best->it)) best = &c;
      }
      if (best == nullptr) return;
      last = &*best->it;
      ++best->it;
      if (!visit(*last)) return;
    }
  }

 private:
  std::map<int, std::set<WaitKey>> by_gpus_;
  size_t size_ = 0;
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_WAIT_QUEUE_H_
