#include "gpufleet/placement/strategies/fgd.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "gpufleet/core/status_macros.h"
#include "gpufleet/placement/strategies/gpu_share.h"

namespace gpufleet {
namespace {

// Everything FGD's answer depends on: free CPU, free share per GPU (in device order, since ties
// go to the first GPU), the task's shape, and, when the task or the workload limits GPU models,
// each GPU's model and the task's allowed models (as small interned ids). Many nodes share a
// state (every idle node of a kind), so answers are memoised across nodes; the model ids keep
// that true with model limits, so the cost does not grow with the share of pods that set them.
struct StateKey {
  int64_t cpu_left = 0;
  int64_t task_cpu = 0;
  int32_t core = 0;
  int32_t count = 0;
  int32_t n = 0;
  int32_t task_models = 0;  // interned allowed-model list; 0 = any model
  uint32_t untouched = 0;   // GPUs nothing holds (whole-GPU tasks take only those)
  uint8_t left[GpuSlots::kMaxGpus] = {};
  uint16_t model[GpuSlots::kMaxGpus] = {};  // interned GPU models; all 0 when no limit applies
  bool operator==(const StateKey& o) const {
    return cpu_left == o.cpu_left && task_cpu == o.task_cpu && core == o.core &&
           count == o.count && n == o.n && task_models == o.task_models &&
           untouched == o.untouched && std::memcmp(left, o.left, n) == 0 &&
           std::memcmp(model, o.model, n * sizeof(model[0])) == 0;
  }
  template <typename H>
  friend H AbslHashValue(H h, const StateKey& k) {
    return H::combine(H::combine_contiguous(H::combine_contiguous(std::move(h), k.left, k.n),
                                            k.model, k.n),
                      k.cpu_left, k.task_cpu, k.core, k.count, k.n, k.task_models, k.untouched);
  }
};

struct Answer {
  double score = 0.0;
  int slot = -1;  // the GPU slot a shared task takes; -1 when it fits nowhere
};

class Fgd : public PlacementStrategy {
 public:
  Fgd(GpuWorkload workload, bool integer) : workload_(std::move(workload)), integer_(integer) {}

  double ScoreNode(const NodeView& v, const Pod& pod, absl::Span<const DeviceGrant>) const override {
    // Place scores every candidate node for one pod: derive its task once. The task is keyed by
    // what it is made of, never by the pod's address or name, which a later pod may share.
    if (pod.cpu_milli != pending_cpu_ || pod.devices != pending_devices_ ||
        pod.gpu_models != pending_.models) {
      pending_ = TaskOf(pod);
      pending_cpu_ = pod.cpu_milli;
      pending_devices_ = pod.devices;
      pending_models_ = ModelsId(pending_.models);
    }
    return Lookup(v, pending_, pending_models_).score;
  }

  bool ChooseDevices(const NodeView& v, const DeviceRequest& r,
                     const std::vector<std::vector<int>>& domains,
                     std::vector<int>* chosen) const override {
    if (r.count != 1 || r.whole()) return ChooseBestFitDevices(v, r, domains, chosen);
    ShareTask t = pending_;
    int models = pending_models_;
    if (!t.shared() || t.core != r.core) {  // not the pod last scored: judge on GPU share alone
      t = ShareTask();
      t.core = static_cast<int>(r.core);
      t.count = 1;
      models = 0;
    }
    const Answer a = Lookup(v, t, models);
    const GpuSlots s = SlotsOf(v);
    const int want = a.slot >= 0 ? s.device[a.slot] : -1;
    for (const auto& domain : domains)
      for (int d : domain)
        if (d == want) {
          *chosen = {d};
          return true;
        }
    return ChooseBestFitDevices(v, r, domains, chosen);
  }

 private:
  // A small id per distinct string (GPU model, or a task's '|'-joined model list); 0 is "".
  int Intern(absl::string_view name) const {
    if (name.empty()) return 0;
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const int id = static_cast<int>(ids_.size()) + 1;
    ids_.emplace(std::string(name), id);
    return id;
  }
  int ModelsId(const std::vector<std::string>& models) const {
    return models.empty() ? 0 : Intern(absl::StrJoin(models, "|"));
  }

  Answer Lookup(const NodeView& v, const ShareTask& t, int task_models) const {
    GpuSlots s = SlotsOf(v);
    const int64_t cpu = CpuLeft(v);
    StateKey key;
    key.cpu_left = cpu;
    key.task_cpu = t.cpu_milli;
    key.core = t.core;
    key.count = t.count;
    key.n = s.n;
    key.task_models = task_models;
    for (int i = 0; i < s.n; ++i) {
      key.left[i] = static_cast<uint8_t>(std::clamp(s.left[i], 0, 255));
      if (v.untouched(s.device[i])) key.untouched |= uint32_t{1} << i;
    }
    if (task_models != 0 || workload_.limits_models()) {
      // Nodes usually carry one model: intern it once, compare the other GPUs' to it.
      const std::string* last = nullptr;
      int id = 0;
      for (int i = 0; i < s.n; ++i) {
        const std::string& model = v.device(s.device[i]).model;
        if (last == nullptr || model != *last) {
          id = Intern(model);
          last = &model;
        }
        key.model[i] = static_cast<uint16_t>(std::min(id, 0xffff));
      }
      if (ids_.size() >= 0xffff) return Evaluate(v, t, s, cpu);  // ids no longer unique
    }
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    if (memo_.size() > kMemoLimit) memo_.clear();
    Answer a = Evaluate(v, t, s, cpu);
    memo_.emplace(key, a);
    return a;
  }

  double Score(double before, double after) const {
    // Fragmentation is in core percent; the sigmoid takes GPUs, as the paper's simulator does.
    const double score = 100.0 / (1.0 + std::exp(-(before - after) / 100.0));
    return integer_ ? std::trunc(score) : score;
  }

  // The paper's step: the score of the best GPU (shared tasks try each GPU they fit on; the first
  // GPU with the highest score wins) or of the whole-GPU placement.
  Answer Evaluate(const NodeView& v, const ShareTask& t, GpuSlots& s, int64_t cpu) const {
    // Models stay with their GPUs while the shares below change: match them once.
    const GpuWorkload::SlotMasks accepted = workload_.AcceptedSlots(v, s);
    const double before = workload_.Fragmentation(s, cpu, accepted);
    const int64_t cpu_after = cpu - t.cpu_milli;
    Answer best;
    if (t.shared()) {
      for (int i = 0; i < s.n; ++i) {
        if (s.left[i] < t.core || !ModelAccepted(t, v, s.device[i])) continue;
        s.left[i] -= t.core;
        const double score = Score(before, workload_.Fragmentation(s, cpu_after, accepted));
        s.left[i] += t.core;
        if (best.slot < 0 || score > best.score) best = {score, i};
      }
      return best;
    }
    if (t.count > 0) {
      std::vector<int> take;
      if (!FirstFreeSlots(t, v, s, &take)) return best;
      for (int i : take) s.left[i] = 0;
    }
    best.score = Score(before, workload_.Fragmentation(s, cpu_after, accepted));
    best.slot = 0;
    return best;
  }

  static constexpr size_t kMemoLimit = size_t{1} << 20;
  GpuWorkload workload_;
  bool integer_;
  mutable ShareTask pending_;
  mutable int64_t pending_cpu_ = -1;  // no pod has negative cpu: the first score derives a task
  mutable std::vector<DeviceRequest> pending_devices_;
  mutable int pending_models_ = 0;
  mutable absl::flat_hash_map<StateKey, Answer> memo_;
  mutable absl::flat_hash_map<std::string, int> ids_;
};

GpuWorkload WholeGpuWorkload() {
  GpuWorkload::Entry e;
  e.task.core = 100;
  e.task.count = 1;
  e.weight = 1.0;
  return *GpuWorkload::Make({e});
}

GPUFLEET_REGISTER(PlacementStrategy,
    {.name = "fgd",
     .description = "fragmentation gradient descent: least growth of expected GPU fragmentation "
                    "against a workload distribution (Weng et al., ATC 2023)",
     .params = {{"workload", ParamType::kAny, nullptr,
                 "[[cpu_milli, core_percent, gpu_count, weight], ...]; default: whole-GPU pods"},
                {"integer_scores", ParamType::kBool, true, "truncate scores as the paper does"}},
     // The memo and the pending task change on every score: one thread at a time.
     .traits = {.deterministic = true, .concurrent_safe = false}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<PlacementStrategy>> {
      ASSIGN_OR_RETURN(bool integer, p.Get<bool>("integer_scores"));
      GpuWorkload w = WholeGpuWorkload();
      if (p.Has("workload")) {
        auto parsed = GpuWorkload::FromJson(p.json()["workload"]);
        if (!parsed.ok())
          return absl::InvalidArgumentError(absl::StrCat("fgd: ", parsed.status().message()));
        w = *std::move(parsed);
      }
      return MakeFgd(std::move(w), integer);
    });

}  // namespace

std::unique_ptr<PlacementStrategy> MakeFgd(GpuWorkload workload, bool integer_scores) {
  // Built without the registry's factory, it still reads its traits from the registration.
  return *Registry<PlacementStrategy>::Global().Adopt(
      "fgd", std::make_unique<Fgd>(std::move(workload), integer_scores));
}

}  // namespace gpufleet
