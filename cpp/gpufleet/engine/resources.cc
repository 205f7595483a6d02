#include "gpufleet/engine/resources.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "gpufleet/core/quantity.h"

namespace gpufleet::engine {

bool ApproxLessEqual(double a, double b) {
  if (a <= b) return true;
  return a - b <= 1e-9 * std::max(1.0, std::fabs(b));
}

bool Resources::IsZero() const {
  for (double x : v)
    if (std::fabs(x) > 1e-9) return false;
  return true;
}

bool Resources::LessEqual(const Resources& o) const {
  for (int i = 0; i < kNumResources; ++i)
    if (!ApproxLessEqual(v[i], o.v[i])) return false;
  return true;
}

std::string Resources::ToString() const {
  auto fmt = [](double x, bool bytes) -> std::string {
    if (std::isinf(x)) return "unlimited";
    if (bytes) return FormatBytes(static_cast<int64_t>(std::llround(x)));
    return absl::StrFormat("%g", x);
  };
  return absl::StrFormat("cpu %s, memory %s, gpu %s", fmt(v[0] / 1000.0, false), fmt(v[1], true),
                         fmt(v[2], false));
}

Resources ResourcesOf(const Pod& pod) {
  Resources r;
  r[0] = static_cast<double>(pod.cpu_milli);
  r[1] = static_cast<double>(pod.memory_bytes);
  r[2] = pod.GpuShare();
  return r;
}

}  // namespace gpufleet::engine
