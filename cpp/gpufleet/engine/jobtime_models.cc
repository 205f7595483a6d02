#include "gpufleet/engine/jobtime_models.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace gpufleet::engine {

JobtimeModels::JobtimeModels(std::map<std::string, double> perf_factors) {
  for (const auto& [model, factor] : perf_factors)
    perf_factors_[absl::AsciiStrToLower(model)] = factor;
}

int JobtimeModels::Find(const std::string& model) const {
  auto it = index_.find(absl::AsciiStrToLower(model));
  return it == index_.end() ? -1 : it->second;
}

int JobtimeModels::Intern(const std::string& model) {
  const std::string key = absl::AsciiStrToLower(model);
  auto [it, added] = index_.emplace(key, num_models());
  const int m = it->second;
  if (added) {
    names_.push_back(model.empty() ? "(no model)" : model);
    spellings_.emplace_back();
    free_.push_back(0);
    healthy_.push_back(0);
    memory_gib_.push_back(0);
  }
  std::vector<std::string>& s = spellings_[m];
  if (std::find(s.begin(), s.end(), model) == s.end()) s.push_back(model);
  return m;
}

bool JobtimeModels::Refresh(const ClusterState& state) {
  const int before = num_models();
  std::fill(free_.begin(), free_.end(), 0);
  std::fill(healthy_.begin(), healthy_.end(), 0);
  std::fill(memory_gib_.begin(), memory_gib_.end(), 0.0);
  for (int n = 0; n < state.num_nodes(); ++n) {
    const NodeView v = state.View(n);
    for (int d = 0; d < v.num_devices(); ++d) {
      const Device& dev = v.device(d);
      if (dev.type != kGpu) continue;
      const int m = Intern(dev.model);
      if (!dev.healthy) continue;
      const double gib = static_cast<double>(dev.memory_bytes) / (1 << 30);
      if (gib > 0 && (memory_gib_[m] == 0 || gib < memory_gib_[m])) memory_gib_[m] = gib;
      ++healthy_[m];
      free_[m] += v.untouched(d);
    }
  }
  return num_models() > before;
}

absl::StatusOr<jobtime::GpuPool> JobtimeModels::Pool(const std::vector<int>& counts) const {
  std::vector<jobtime::GpuModel> models(num_models());
  for (int m = 0; m < num_models(); ++m) {
    models[m].name = names_[m];
    models[m].count = m < static_cast<int>(counts.size()) ? counts[m] : 0;
    models[m].memory_gib = memory_gib_[m];
    auto pf = perf_factors_.find(absl::AsciiStrToLower(names_[m]));
    models[m].perf_factor =
        pf != perf_factors_.end() ? pf->second : jobtime::DefaultPerfFactor(names_[m]);
  }
  return jobtime::GpuPool::Create(std::move(models));
}

int JobtimeModels::ModelOf(const ClusterState& state, const Allocation& a) const {
  const int n = state.FindNode(a.node);
  if (n < 0) return -1;
  const Node& node = state.node(n);
  for (const DeviceGrant& g : a.devices) {
    if (g.type != kGpu) continue;
    for (const Device& d : node.devices)
      if (d.type == kGpu && d.minor == g.minor) return Find(d.model);
  }
  return -1;
}

}  // namespace gpufleet::engine
