// "Nothing fits this request" remembered per request key, so that the many gangs that cannot fit
// late in a scheduling cycle cost one lookup each instead of a scan. A miss stays true while
// resources are only taken; the host forgets misses when resources come back (ForgetAll) or when
// the tentative placements made after a miss are undone (ForgetSince the undo's start).
#ifndef GPUFLEET_PLACEMENT_MISS_CACHE_H_
#define GPUFLEET_PLACEMENT_MISS_CACHE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace gpufleet {

class MissCache {
 public:
  // The reason recorded for `key`, or null.
  const std::string* Find(int key) const {
    auto it = misses_.find(key);
    return it == misses_.end() ? nullptr : &it->second.reason;
  }
  // `key` fits nowhere, as found at the host's `version`.
  void Record(int key, std::string reason, uint64_t version) {
    misses_[key] = Miss{std::move(reason), version};
  }
  // Placements made after `version` were undone: misses found since may be wrong.
  void ForgetSince(uint64_t version) {
    absl::erase_if(misses_, [&](const auto& kv) { return kv.second.version > version; });
  }
  void ForgetAll() { misses_.clear(); }

 private:
  struct Miss {
    std::string reason;
    uint64_t version;
  };
  absl::flat_hash_map<int, Miss> misses_;
};

}  // namespace gpufleet

#endif  // GPUFLEET_PLACEMENT_MISS_CACHE_H_
