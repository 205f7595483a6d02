// The resource vector that fairness is computed on: cpu (milli-cores), memory (bytes) and GPUs in
// whole-GPU equivalents (a 50% shared GPU counts 0.5, Pod::GpuShare). Doubles, because shares and
// water-filling divide; comparisons use a relative tolerance so sums of shares compare stably.
#ifndef GPUFLEET_ENGINE_RESOURCES_H_
#define GPUFLEET_ENGINE_RESOURCES_H_

#include <array>
#include <limits>
#include <string>

#include "gpufleet/core/pod.h"

namespace gpufleet::engine {

inline constexpr int kNumResources = 3;
inline constexpr std::array<const char*, kNumResources> kResourceNames = {"cpu", "memory", "gpu"};

struct Resources {
  std::array<double, kNumResources> v{0.0, 0.0, 0.0};

  static Resources Unlimited() {
    Resources r;
    r.v.fill(std::numeric_limits<double>::infinity());
    return r;
  }
  double& operator[](int i) { return v[i]; }
  double operator[](int i) const { return v[i]; }
  Resources& operator+=(const Resources& o) {
    for (int i = 0; i < kNumResources; ++i) v[i] += o.v[i];
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    for (int i = 0; i < kNumResources; ++i) v[i] -= o.v[i];
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  bool IsZero() const;
  // Every dimension <= the other's, within a small relative tolerance.
  bool LessEqual(const Resources& o) const;
  std::string ToString() const;  // "cpu 4, memory 16Gi, gpu 2.5"
};

// A pod's request as a fairness vector.
Resources ResourcesOf(const Pod& pod);

// Tolerance used by LessEqual and by the share computations.
bool ApproxLessEqual(double a, double b);

}  // namespace gpufleet::engine

#endif  // GPUFLEET_ENGINE_RESOURCES_H_
