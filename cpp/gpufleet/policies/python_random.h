// Python's `random.Random` (CPython's Mersenne Twister MT19937 with its integer seeding), for the
// few draws a reproduction of a Python simulator must repeat exactly: Gavel's per-round shuffle of
// the GPU types and its fifo policy's random index. Only what those need: seed(int), getrandbits(k)
// for k <= 32, randbelow(n) (`randrange(n)`) and shuffle. Equal seeds give equal sequences to
// CPython 3.2+ (tests/cpp/python_random_test.cc holds values CPython printed).
#ifndef GPUFLEET_POLICIES_PYTHON_RANDOM_H_
#define GPUFLEET_POLICIES_PYTHON_RANDOM_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace gpufleet::jobtime {

class PythonRandom {
 public:
  // random.Random(seed) for seed >= 0: the seed split into 32-bit words (low word first) keys
  // MT19937's init_by_array.
  explicit PythonRandom(uint64_t seed = 0);
  // random.getrandbits(k) for 1 <= k <= 32.
  uint32_t GetRandBits(int k);
  // random.randrange(n) for n >= 1: rejection sampling over n's bit length, as CPython does.
  int64_t RandBelow(int64_t n);
  // random.shuffle(v).
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (int64_t i = static_cast<int64_t>(v.size()) - 1; i >= 1; --i)
      std::swap(v[i], v[RandBelow(i + 1)]);
  }

 private:
  uint32_t Next();
  uint32_t state_[624];
  int index_ = 624;
};

}  // namespace gpufleet::jobtime

#endif  // GPUFLEET_POLICIES_PYTHON_RANDOM_H_
