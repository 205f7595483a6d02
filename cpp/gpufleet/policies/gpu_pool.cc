#include "gpufleet/policies/gpu_pool.h"

#include <algorithm>
#include <climits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::jobtime {

double DefaultPerfFactor(const std::string& model_name) {
  std::string n = absl::AsciiStrToLower(model_name);
  if (n == "k80") return 4.37 / 15.7;
  if (n == "p100") return 10.6 / 15.7;
  if (n == "t4") return 8.1 / 15.7;
  if (n == "a10") return 31.2 / 15.7;
  if (n == "a100") return 19.5 / 15.7;
  return 1.0;
}

absl::StatusOr<GpuPool> GpuPool::Create(std::vector<GpuModel> models) {
  if (models.empty()) return absl::InvalidArgumentError("cluster: no GPU models");
  GpuPool pool;
  for (size_t i = 0; i < models.size(); ++i) {
    const GpuModel& m = models[i];
    if (m.name.empty())
      return absl::InvalidArgumentError(absl::StrFormat("cluster: model %d has no name", i));
    if (m.count < 0)
      return absl::InvalidArgumentError(
          absl::StrFormat("cluster: model \"%s\" has a negative count (%d)", m.name, m.count));
    if (m.gpus_per_node < 1)
      return absl::InvalidArgumentError(absl::StrFormat(
          "cluster: model \"%s\" needs gpus_per_node >= 1 (has %d)", m.name, m.gpus_per_node));
    if (m.memory_gib < 0 || !(m.perf_factor > 0))
      return absl::InvalidArgumentError(absl::StrFormat(
          "cluster: model \"%s\" needs memory_gib >= 0 and perf_factor > 0", m.name));
    if (pool.Find(m.name) >= 0)
      return absl::InvalidArgumentError(
          absl::StrFormat("cluster: model \"%s\" is listed twice", m.name));
    if (int64_t{pool.total_} + m.count > INT_MAX)
      return absl::InvalidArgumentError(
          absl::StrFormat("cluster: more than %d GPUs in all", INT_MAX));
    pool.models_.push_back(m);
    pool.total_ += m.count;
    pool.max_count_ = std::max(pool.max_count_, m.count);
  }
  if (pool.total_ == 0) return absl::InvalidArgumentError("cluster: no GPUs");
  std::vector<std::string> lower;
  for (const GpuModel& m : pool.models_) lower.push_back(absl::AsciiStrToLower(m.name));
  pool.name_order_.resize(pool.models_.size());
  for (size_t i = 0; i < pool.name_order_.size(); ++i) pool.name_order_[i] = static_cast<int>(i);
  // Names are unique ignoring case (checked above), so this order is total.
  std::sort(pool.name_order_.begin(), pool.name_order_.end(),
            [&](int a, int b) { return lower[a] < lower[b]; });
  return pool;
}

static absl::StatusOr<GpuModel> ModelFromJson(const std::string& name, const Json& v) {
  GpuModel m;
  m.name = name;
  m.perf_factor = DefaultPerfFactor(name);
  std::string owner = absl::StrFormat("cluster model \"%s\"", name);
  if (v.is_number_integer()) {
    // Range first: a count past int would otherwise be truncated into a different count.
    const bool in_range = v.is_number_unsigned()
                              ? v.get<uint64_t>() <= static_cast<uint64_t>(INT_MAX)
                              : v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT_MAX;
    if (!in_range)
      return absl::InvalidArgumentError(owner + ": GPU count must be an integer in [0, " +
                                        std::to_string(INT_MAX) + "], got " + v.dump());
    m.count = static_cast<int>(v.get<int64_t>());
    return m;
  }
  if (!v.is_object())
    return absl::InvalidArgumentError(owner + ": expected a GPU count or an object");
  RETURN_IF_ERROR(CheckKnownParams(v, owner, {"name", "count", "memory_gib", "perf_factor",
                                         "gpus_per_node"}));
  if (!v.contains("count")) return absl::InvalidArgumentError(owner + ": missing \"count\"");
  ASSIGN_OR_RETURN(m.count, Param<int>(v, owner, "count", 0));
  ASSIGN_OR_RETURN(m.memory_gib, Param<double>(v, owner, "memory_gib", 0.0));
  ASSIGN_OR_RETURN(m.perf_factor, Param<double>(v, owner, "perf_factor", m.perf_factor));
  ASSIGN_OR_RETURN(m.gpus_per_node, Param<int>(v, owner, "gpus_per_node", m.gpus_per_node));
  return m;
}

absl::StatusOr<GpuPool> GpuPool::FromJson(const Json& spec) {
  std::vector<GpuModel> models;
  if (spec.is_object()) {
    for (auto it = spec.begin(); it != spec.end(); ++it) {
      ASSIGN_OR_RETURN(GpuModel m, ModelFromJson(it.key(), it.value()));
      models.push_back(std::move(m));
    }
  } else if (spec.is_array()) {
    for (const Json& v : spec) {
      if (!v.is_object() || !v.contains("name") || !v["name"].is_string())
        return absl::InvalidArgumentError("cluster: each list entry needs a \"name\"");
      ASSIGN_OR_RETURN(GpuModel m, ModelFromJson(v["name"].get<std::string>(), v));
      models.push_back(std::move(m));
    }
  } else {
    return absl::InvalidArgumentError("cluster: expected an object {model: count} or a list");
  }
  int64_t total = 0;
  for (const GpuModel& m : models) total += std::max(m.count, 0);
  if (total > kMaxPoolGpus)
    return absl::InvalidArgumentError(
        absl::StrFormat("cluster: %d GPUs is more than the %d a simulated cluster may have",
                        total, kMaxPoolGpus));
  return Create(std::move(models));
}

int GpuPool::Find(const std::string& name) const {
  std::string n = absl::AsciiStrToLower(name);
  for (int i = 0; i < num_models(); ++i)
    if (absl::AsciiStrToLower(models_[i].name) == n) return i;
  return -1;
}

}  // namespace gpufleet::jobtime
