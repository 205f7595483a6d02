// The lock each public object serialises itself with: many readers or one writer, like
// std::shared_mutex (it meets the SharedMutex requirements, so std::shared_lock and
// std::unique_lock work with it). It also knows which thread holds it exclusively, so a call that
// re-enters its own object from inside a write (an engine plugin written in Python calling back
// into the engine that runs it) can be refused with an error instead of deadlocking.
//
// Objects whose callbacks call each other (two engines whose Python plugins each call the other
// engine) could still wait for each other in a ring. So before a thread blocks, it follows the
// wait-for chain: the lock's writer, the lock that writer is waiting for, that lock's writer...
// If the chain comes back to the calling thread, waiting would never end: lock() and
// lock_shared() throw std::system_error (resource_deadlock_would_occur) naming the objects
// instead. The check is exact because no thread ever waits for an object's lock while holding
// another object's lock shared: shared holders run plain C++ to the end (readers copy and
// release; GuardedCluster::Equals copies one side first), and only an exclusive holder runs
// callbacks that may wait for other objects.
#ifndef GPUFLEET_ACCOUNTING_OBJECT_LOCK_H_
#define GPUFLEET_ACCOUNTING_OBJECT_LOCK_H_

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <thread>

namespace gpufleet {

class ObjectLock {
 public:
  // `kind` names what the lock guards in error messages ("engine", "cluster"); a static string.
  explicit ObjectLock(const char* kind = "object");
  ObjectLock(const ObjectLock&) = delete;
  ObjectLock& operator=(const ObjectLock&) = delete;

  // Throw std::system_error (resource_deadlock_would_occur) instead of closing a wait-for cycle.
  void lock() {
    if (!mu_.try_lock()) Await(/*exclusive=*/true);
    writer_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    writer_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    writer_.store(std::thread::id(), std::memory_order_relaxed);
    mu_.unlock();
  }
  void lock_shared() {
    if (!mu_.try_lock_shared()) Await(/*exclusive=*/false);
  }
  bool try_lock_shared() { return mu_.try_lock_shared(); }
  void unlock_shared() { mu_.unlock_shared(); }

  // True when the calling thread holds the lock exclusively. Exact without ordering: only a
  // thread itself ever stores its own id, so it reads back its own store or someone else's id.
  bool HeldByThisThread() const {
    return writer_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

  // "engine #3": the kind and a number unique among this process's locks, for messages.
  std::string name() const;

 private:
  // The slow path: check the wait-for chain, then block registered as waiting for this lock.
  void Await(bool exclusive);

  std::shared_mutex mu_;
  std::atomic<std::thread::id> writer_{};
  const char* kind_;
  uint64_t number_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_OBJECT_LOCK_H_
