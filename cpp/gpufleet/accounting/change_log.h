// Which nodes changed, in order, so that a reader who remembers where it stopped (the log's id and
// a position) reads only the nodes changed since, instead of comparing every node's version. A
// copied or moved state starts a log of its own (a fresh id), and removing a node (which shifts
// indices) starts a fresh log too, so a position is only ever read against the history it was
// taken from; a reader whose position is gone (another log, or entries dropped to bound memory)
// compares versions instead.
#ifndef GPUFLEET_ACCOUNTING_CHANGE_LOG_H_
#define GPUFLEET_ACCOUNTING_CHANGE_LOG_H_

#include <atomic>
#include <cstdint>
#include <vector>

namespace gpufleet {

class ChangeLog {
 public:
  ChangeLog() : id_(NextId()) {}
  ChangeLog(const ChangeLog&) : id_(NextId()) {}
  ChangeLog(ChangeLog&&) noexcept : id_(NextId()) {}
  ChangeLog& operator=(const ChangeLog&) {
    Restart();
    return *this;
  }
  ChangeLog& operator=(ChangeLog&&) noexcept {
    Restart();
    return *this;
  }

  // Node `node` changed. At `keep` entries the older half is dropped first (readers that far
  // behind compare versions, which costs about what reading that many entries would).
  void Record(int node, size_t keep) {
    if (nodes_.size() >= keep) {
      const size_t drop = nodes_.size() - keep / 2;
      nodes_.erase(nodes_.begin(), nodes_.begin() + drop);
      begin_ += drop;
    }
    nodes_.push_back(node);
  }
  // Node indices shifted: no earlier position stays meaningful.
  void Restart() {
    id_ = NextId();
    begin_ = 0;
    nodes_.clear();
  }

  uint64_t id() const { return id_; }
  uint64_t begin() const { return begin_; }  // the oldest position still readable
  uint64_t end() const { return begin_ + nodes_.size(); }
  // The node recorded at `position` (begin() <= position < end()).
  int at(uint64_t position) const { return nodes_[position - begin_]; }

 private:
  static uint64_t NextId() {
    static std::atomic<uint64_t> ids{0};
    return ids.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  uint64_t id_;
  uint64_t begin_ = 0;
  std::vector<int> nodes_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_ACCOUNTING_CHANGE_LOG_H_
