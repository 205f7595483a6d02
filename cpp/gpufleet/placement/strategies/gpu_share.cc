#include "gpufleet/placement/strategies/gpu_share.h"

#include <algorithm>

namespace gpufleet {

ShareTask TaskOf(const Pod& pod) {
  ShareTask t;
  t.cpu_milli = pod.cpu_milli;
  t.models = pod.gpu_models;
  const DeviceRequest* g = nullptr;
  for (const DeviceRequest& r : pod.devices)
    if (IsGpuType(r.type)) g = &r;
  if (g == nullptr || g->count <= 0) return t;
  t.count = g->count;
  t.core = g->whole() ? 100 : static_cast<int>(std::clamp<int64_t>(g->core, 0, 100));
  return t;
}

int64_t GpuSlots::total_left() const {
  int64_t s = 0;
  for (int i = 0; i < n; ++i) s += left[i];
  return s;
}

GpuSlots SlotsOf(const NodeView& view) {
  GpuSlots s;
  for (int d = 0; d < view.num_devices() && s.n < GpuSlots::kMaxGpus; ++d) {
    const Device& dev = view.device(d);
    if (!dev.healthy || !IsGpuType(dev.type)) continue;
    s.left[s.n] = static_cast<int>(std::max<int64_t>(0, view.free_core(d)));
    s.device[s.n] = d;
    ++s.n;
  }
  return s;
}

int64_t CpuLeft(const NodeView& view) { return view.node->cpu_milli - view.usage->cpu_used; }

bool ModelAccepted(const ShareTask& task, const NodeView& view, int device) {
  if (task.models.empty()) return true;
  const std::string& model = view.device(device).model;
  return std::find(task.models.begin(), task.models.end(), model) != task.models.end();
}

int BestFitSlot(const ShareTask& task, const NodeView& view, const GpuSlots& slots) {
  int best = -1;
  for (int i = 0; i < slots.n; ++i) {
    if (slots.left[i] < task.core || !ModelAccepted(task, view, slots.device[i])) continue;
    if (best < 0 || slots.left[i] < slots.left[best]) best = i;
  }
  return best;
}

bool FirstFreeSlots(const ShareTask& task, const NodeView& view, const GpuSlots& slots,
                    std::vector<int>* slot_indices) {
  slot_indices->clear();
  for (int i = 0; i < slots.n && static_cast<int>(slot_indices->size()) < task.count; ++i) {
    if (view.untouched(slots.device[i]) && ModelAccepted(task, view, slots.device[i]))
      slot_indices->push_back(i);
  }
  return static_cast<int>(slot_indices->size()) == task.count;
}

bool ChooseBestFitDevices(const NodeView& view, const DeviceRequest& request,
                          const std::vector<std::vector<int>>& domains, std::vector<int>* chosen) {
  if (request.count == 1 && !request.whole()) {
    int best = -1;
    for (const auto& domain : domains)
      for (int d : domain)
        if (best < 0 || view.free_core(d) < view.free_core(best) ||
            (view.free_core(d) == view.free_core(best) &&
             view.device(d).minor < view.device(best).minor))
          best = d;
    if (best < 0) return false;
    *chosen = {best};
    return true;
  }
  for (const auto& domain : domains) {
    if (static_cast<int>(domain.size()) < request.count) continue;
    chosen->assign(domain.begin(), domain.begin() + request.count);
    return true;
  }
  return false;
}

}  // namespace gpufleet
