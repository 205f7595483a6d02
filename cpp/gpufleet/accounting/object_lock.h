// The lock each public object serialises itself with: many readers or one writer, like
// std::shared_mutex (it meets the SharedMutex requirements, so std::shared_lock and
// std::unique_lock work with it). It also knows which thread holds it exclusively, so a call that
// re-enters its own object from inside a write (an engine plugin written in Python calling back
// into the engine that runs it) can be refused with an error instead of deadlocking.
#ifndef GPUFLEET_ACCOUNTING_OBJECT_LOCK_H_
#define GPUFLEET_ACCOUNTING_OBJECT_LOCK_H_

#include <atomic>
#include <shared_mutex>
#include <thread>

namespace gpufleet {

class ObjectLock {
 public:
  ObjectLock() = default;
  ObjectLock(const ObjectLock&) = delete;
  ObjectLock& operator=(const ObjectLock&) = delete;

  void lock() {
    mu_.lock();
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
  void lock_shared() { mu_.lock_shared(); }
  bool try_lock_shared() { return mu_.try_lock_shared(); }
  void unlock_shared() { mu_.unlock_shared(); }

  // True when the calling thread holds the lock exclusively. Exact without ordering: only a
  // thread itself ever stores its own id, so it reads back its own store or someone else's id.
  bool HeldByThisThread() const {
    return writer_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

 private:
  std::shared_mutex mu_;
  std::atomic<std::thread::id> writer_{};
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_OBJECT_LOCK_H_
