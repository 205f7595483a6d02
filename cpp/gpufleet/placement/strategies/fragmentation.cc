#include "gpufleet/placement/strategies/fragmentation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet {

absl::StatusOr<GpuWorkload> GpuWorkload::Make(std::vector<Entry> entries) {
  double sum = 0.0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (!(e.weight >= 0.0))
      return absl::InvalidArgumentError(
          absl::StrFormat("workload entry %d: weight must be >= 0, got %g", i, e.weight));
    if (e.task.cpu_milli < 0 || e.task.count < 0 || e.task.core < 0 || e.task.core > 100 ||
        (e.task.count > 0) != (e.task.core > 0))
      return absl::InvalidArgumentError(absl::StrFormat(
          "workload entry %d: need cpu_milli >= 0, gpu_count >= 0 and core percent in 1-100 "
          "exactly when gpu_count > 0 (got cpu %d, core %d, count %d)",
          i, e.task.cpu_milli, e.task.core, e.task.count));
    if (e.task.count > 1 && e.task.core != 100)
      return absl::InvalidArgumentError(absl::StrFormat(
          "workload entry %d: multi-GPU tasks take whole GPUs (core 100), got %d", i, e.task.core));
    sum += e.weight;
  }
  if (entries.empty() || !(sum > 0.0))
    return absl::InvalidArgumentError("workload: needs at least one entry with positive weight");
  GpuWorkload w;
  for (Entry& e : entries) {
    if (e.weight == 0.0) continue;
    e.weight /= sum;
    w.entries_.push_back(std::move(e));
  }
  w.Index();
  return w;
}

GpuWorkload GpuWorkload::FromTasks(absl::Span<const ShareTask> tasks, double coverage) {
  using Key = std::tuple<int64_t, int, int, std::vector<std::string>>;
  std::map<Key, int64_t> counts;
  for (const ShareTask& t : tasks) {
    std::vector<std::string> models = t.models;
    std::sort(models.begin(), models.end());
    ++counts[Key(t.cpu_milli, t.count > 0 ? t.core : 0, t.count, models)];
  }
  std::vector<std::pair<int64_t, Key>> order;
  for (const auto& [key, n] : counts) order.emplace_back(n, key);
  // Most frequent first; equal counts in decreasing shape order, as the paper's simulator does.
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a > b; });
  const double target = std::clamp(coverage, 0.0, 1.0) * static_cast<double>(tasks.size());
  std::vector<Entry> entries;
  double covered = 0.0;
  for (const auto& [n, key] : order) {
    if (covered >= target && !entries.empty()) break;
    Entry e;
    std::tie(e.task.cpu_milli, e.task.core, e.task.count, e.task.models) = key;
    e.weight = static_cast<double>(n);
    covered += n;
    entries.push_back(std::move(e));
  }
  if (entries.empty()) return GpuWorkload();
  auto made = Make(std::move(entries));
  return made.ok() ? *std::move(made) : GpuWorkload();
}

namespace {

// An integer workload field within [lo, hi]. A float or an out-of-range number is an error,
// never a conversion (casting 1e47 to int is undefined behaviour).
absl::StatusOr<int64_t> WorkloadInt(const Json& v, size_t entry, const char* field, int64_t lo,
                                    int64_t hi) {
  const bool in_range = v.is_number_unsigned()
                            ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                            : v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!in_range)
    return absl::InvalidArgumentError(absl::StrFormat(
        "workload entry %d: %s must be an integer in [%d, %d], got %s", entry, field, lo, hi,
        v.dump()));
  return v.get<int64_t>();
}

}  // namespace

absl::StatusOr<GpuWorkload> GpuWorkload::FromJson(const Json& json) {
  if (!json.is_array())
    return absl::InvalidArgumentError(
        "workload: expected a list of [cpu_milli, core_percent, gpu_count, weight]");
  std::vector<Entry> entries;
  for (size_t i = 0; i < json.size(); ++i) {
    const Json& item = json[i];
    Entry e;
    const bool listed = item.is_array() && item.size() == 4;
    if (!listed && !item.is_object())
      return absl::InvalidArgumentError(absl::StrFormat(
          "workload entry %d: expected [cpu_milli, core_percent, gpu_count, weight] or an "
          "object, got %s", i, item.dump()));
    auto field = [&](const char* key, const Json& fallback) -> const Json& {
      auto it = item.find(key);
      return it == item.end() ? fallback : *it;
    };
    const Json zero = 0, one = 1.0;
    const Json& cpu = listed ? item[0] : field("cpu_milli", zero);
    const Json& core = listed ? item[1] : field("core", zero);
    const Json& count = listed ? item[2] : field("gpu_count", zero);
    const Json& weight = listed ? item[3] : field("weight", one);
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    ASSIGN_OR_RETURN(e.task.cpu_milli,
                     WorkloadInt(cpu, i, "cpu_milli", 0, std::numeric_limits<int64_t>::max()));
    ASSIGN_OR_RETURN(e.task.core, WorkloadInt(core, i, "core", 0, kIntMax));
    ASSIGN_OR_RETURN(e.task.count, WorkloadInt(count, i, "gpu_count", 0, kIntMax));
    if (!weight.is_number() || !std::isfinite(weight.get<double>()))
      return absl::InvalidArgumentError(absl::StrFormat(
          "workload entry %d: weight must be a finite number, got %s", i, weight.dump()));
    e.weight = weight.get<double>();
    if (!listed && item.contains("models")) {
      const Json& models = item["models"];
      if (!models.is_array() ||
          !std::all_of(models.begin(), models.end(), [](const Json& m) { return m.is_string(); }))
        return absl::InvalidArgumentError(absl::StrFormat(
            "workload entry %d: models must be a list of GPU model names, got %s", i,
            models.dump()));
      e.task.models = models.get<std::vector<std::string>>();
    }
    entries.push_back(std::move(e));
  }
  return Make(std::move(entries));
}

Json GpuWorkload::ToJson() const {
  Json out = Json::array();
  for (const Entry& e : entries_) {
    Json item = {{"cpu_milli", e.task.cpu_milli}, {"core", e.task.core},
                 {"gpu_count", e.task.count}, {"weight", e.weight}};
    if (!e.task.models.empty()) item["models"] = e.task.models;
    out.push_back(std::move(item));
  }
  return out;
}

void GpuWorkload::Index() {
  by_core_.clear();
  with_models_.clear();
  cpu_only_weight_ = 0.0;
  for (const Entry& e : entries_) {
    if (e.task.count == 0)
      cpu_only_weight_ += e.weight;
    else if (e.task.models.empty())
      by_core_.push_back(e);
    else
      with_models_.push_back(e);
  }
  std::stable_sort(by_core_.begin(), by_core_.end(),
                   [](const Entry& a, const Entry& b) { return a.task.core > b.task.core; });
}

GpuWorkload::SlotMasks GpuWorkload::AcceptedSlots(const NodeView& view,
                                                   const GpuSlots& slots) const {
  SlotMasks out(with_models_.size(), 0);
  if (with_models_.empty()) return out;
  // A node usually carries one model: each task's verdict is taken once per distinct model.
  const std::string* models[GpuSlots::kMaxGpus];
  uint32_t slots_of[GpuSlots::kMaxGpus] = {};
  int distinct = 0;
  for (int i = 0; i < slots.n; ++i) {
    const std::string& m = view.device(slots.device[i]).model;
    int k = 0;
    while (k < distinct && *models[k] != m) ++k;
    if (k == distinct) models[distinct++] = &m;
    slots_of[k] |= uint32_t{1} << i;
  }
  for (size_t e = 0; e < with_models_.size(); ++e) {
    const std::vector<std::string>& allowed = with_models_[e].task.models;
    for (int k = 0; k < distinct; ++k)
      if (std::find(allowed.begin(), allowed.end(), *models[k]) != allowed.end())
        out[e] |= slots_of[k];
  }
  return out;
}

double GpuWorkload::Fragmentation(const NodeView& view, const GpuSlots& slots,
                                  int64_t cpu_left) const {
  if (with_models_.empty()) return Fragmentation(slots, cpu_left, SlotMasks());
  return Fragmentation(slots, cpu_left, AcceptedSlots(view, slots));
}

double GpuWorkload::Fragmentation(const GpuSlots& slots, int64_t cpu_left,
                                  const SlotMasks& accepted) const {
  const int64_t total = slots.total_left();
  if (total == 0) return 0.0;
  // A task that wants no GPU cannot use any free GPU share.
  double frag = cpu_only_weight_ * total;
  // Tasks by decreasing share meet the GPUs by decreasing free share: one merge pass.
  int sorted[GpuSlots::kMaxGpus];
  for (int i = 0; i < slots.n; ++i) {
    int x = slots.left[i], j = i;
    for (; j > 0 && sorted[j - 1] < x; --j) sorted[j] = sorted[j - 1];
    sorted[j] = x;
  }
  int fitting = 0;
  int64_t usable = 0;
  for (const Entry& e : by_core_) {
    while (fitting < slots.n && sorted[fitting] >= e.task.core) usable += sorted[fitting++];
    const bool runs = cpu_left >= e.task.cpu_milli && fitting >= e.task.count;
    frag += e.weight * static_cast<double>(runs ? total - usable : total);
  }
  for (size_t k = 0; k < with_models_.size(); ++k) {
    const Entry& e = with_models_[k];
    int n = 0;
    int64_t ok = 0;
    for (int i = 0; i < slots.n; ++i) {
      if (slots.left[i] < e.task.core || !(accepted[k] >> i & 1)) continue;
      ++n;
      ok += slots.left[i];
    }
    const bool runs = cpu_left >= e.task.cpu_milli && n >= e.task.count;
    frag += e.weight * static_cast<double>(runs ? total - ok : total);
  }
  return frag;
}

}  // namespace gpufleet
