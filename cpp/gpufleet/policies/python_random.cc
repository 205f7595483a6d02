#include "gpufleet/policies/python_random.h"

namespace gpufleet::jobtime {
namespace {

constexpr int kN = 624;
constexpr int kM = 397;

}  // namespace

PythonRandom::PythonRandom(uint64_t seed) {
  // init_genrand(19650218), then init_by_array with the seed's 32-bit words (M. Matsumoto and
  // T. Nishimura's reference, which CPython's random_seed calls).
  uint64_t n = seed;
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(n & 0xffffffffu));
    n >>= 32;
  } while (n != 0);
  state_[0] = 19650218u;
  for (int i = 1; i < kN; ++i)
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  int i = 1;
  std::size_t j = 0;
  for (int k = kN > static_cast<int>(key.size()) ? kN : static_cast<int>(key.size()); k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525u)) + key[j] +
                static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941u)) -
                static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000u;
  index_ = kN;
}

uint32_t PythonRandom::Next() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  if (index_ >= kN) {
    for (int k = 0; k < kN; ++k) {
      const uint32_t y = (state_[k] & kUpper) | (state_[(k + 1) % kN] & kLower);
      state_[k] = state_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint32_t PythonRandom::GetRandBits(int k) { return Next() >> (32 - k); }

int64_t PythonRandom::RandBelow(int64_t n) {
  int k = 0;
  while (k < 32 && (int64_t{1} << k) <= n) ++k;  // n.bit_length(), n < 2^31 here
  uint32_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

}  // namespace gpufleet::jobtime
