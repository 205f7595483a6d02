#include "gpufleet/accounting/object_lock.h"

#include <mutex>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace gpufleet {
namespace {

// Which lock each blocked thread is waiting for. Threads register and check under one mutex, so
// of two threads closing a ring, the second to register sees the first and refuses.
struct WaitForGraph {
  std::mutex mu;
  std::unordered_map<std::thread::id, const ObjectLock*> waiting;
};

WaitForGraph& Waits() {
  static auto* graph = new WaitForGraph();  // never destroyed: threads may outlive statics
  return *graph;
}

std::atomic<uint64_t> next_lock_number{1};

// chain[0] is the lock this thread asked for, chain[i+1] what chain[i]'s writer waits for, and
// this thread holds the last one.
std::string CycleMessage(const std::vector<const ObjectLock*>& chain) {
  std::string out = "waiting for " + chain[0]->name() + " would deadlock: ";
  for (size_t i = 1; i < chain.size(); ++i)
    out += (i == 1 ? "it" : chain[i - 1]->name()) + " is held by another thread that waits for " +
           chain[i]->name() + ", ";
  out += (chain.size() == 1 ? "it" : chain.back()->name()) +
         std::string(" is held by this thread (objects whose callbacks call each other)");
  return out;
}

}  // namespace

ObjectLock::ObjectLock(const char* kind)
    : kind_(kind), number_(next_lock_number.fetch_add(1, std::memory_order_relaxed)) {}

std::string ObjectLock::name() const { return std::string(kind_) + " #" + std::to_string(number_); }

void ObjectLock::Await(bool exclusive) {
  const std::thread::id me = std::this_thread::get_id();
  WaitForGraph& graph = Waits();
  {
    std::lock_guard<std::mutex> hold(graph.mu);
    // A registered thread cannot release anything until it stops waiting, and it deregisters
    // under this mutex: every link read here is current, so a chain back to this thread is a
    // real cycle. A lock held only by readers (no writer) ends the chain: readers never wait.
    std::vector<const ObjectLock*> chain{this};
    for (size_t steps = 0; steps <= graph.waiting.size(); ++steps) {
      const std::thread::id holder = chain.back()->writer_.load(std::memory_order_relaxed);
      if (holder == std::thread::id()) break;
      if (holder == me)
        throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                                CycleMessage(chain));
      auto next = graph.waiting.find(holder);
      if (next == graph.waiting.end()) break;
      chain.push_back(next->second);
    }
    graph.waiting[me] = this;
  }
  struct Deregister {
    WaitForGraph& graph;
    std::thread::id me;
    ~Deregister() {
      std::lock_guard<std::mutex> hold(graph.mu);
      graph.waiting.erase(me);
    }
  } deregister{graph, me};
  if (exclusive) {
    mu_.lock();
  } else {
    mu_.lock_shared();
  }
}

}  // namespace gpufleet
