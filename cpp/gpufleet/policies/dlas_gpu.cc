#include "gpufleet/policies/dlas_gpu.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::jobtime {

std::vector<ParamSpec> DlasGpu::OptionParams() {
  const Options defaults;
  return {{.name = "queue_limits", .type = ParamType::kNumberList,
           .default_value = defaults.queue_limits,
           .help = "service limits of the queues, increasing", .range = {.above = 0}},
          {.name = "starvation_ratio", .type = ParamType::kNumber,
           .default_value = defaults.starvation_ratio,
           .help = "promote a job waiting this many times its run time (0: off)",
           .range = {.at_least = 0}},
          {.name = "service", .type = ParamType::kString, .default_value = "gpu_time",
           .help = "attained service in GPU-seconds (gpu_time) or seconds (time)",
           .one_of = {"gpu_time", "time"}}};
}

absl::StatusOr<DlasGpu::Options> DlasGpu::ParseOptions(const Params& p) {
  const std::string& owner = p.owner();
  Options o;
  ASSIGN_OR_RETURN(o.queue_limits, p.Get<std::vector<double>>("queue_limits"));
  for (size_t i = 1; i < o.queue_limits.size(); ++i)
    if (o.queue_limits[i] <= o.queue_limits[i - 1])
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: queue_limits must be increasing, got %s", owner,
                          p.json()["queue_limits"].dump()));
  ASSIGN_OR_RETURN(o.starvation_ratio, p.Get<double>("starvation_ratio"));
  ASSIGN_OR_RETURN(std::string s, p.Get<std::string>("service"));
  o.gputime = s == "gpu_time";
  return o;
}

absl::Status DlasGpu::Init(const JobTimeView& view) {
  queue_of_.assign(view.jobs->size(), -1);
  time_offset_.assign(view.jobs->size(), 0);
  return absl::OkStatus();
}

double DlasGpu::Service(const JobTimeView& view, int job) const {
  double t = view.RunTime(job) - time_offset_[job];
  return o_.gputime ? t * view.job(job).spec.num_gpu : t;
}

void DlasGpu::Move(int job, int to) {
  auto& from = queues_[queue_of_[job]];
  from.erase(std::find(from.begin(), from.end(), job));
  queues_[to].push_back(job);
  queue_of_[job] = to;
}

void DlasGpu::OnArrival(int job, const JobTimeView& view) {
  if (job >= static_cast<int>(queue_of_.size())) {  // the engine's ledger grows with arrivals
    queue_of_.resize(view.jobs->size(), -1);
    time_offset_.resize(view.jobs->size(), 0);
  }
  queues_[0].push_back(job);
  queue_of_[job] = 0;
}

void DlasGpu::OnFinish(int job, const JobTimeView&) {
  auto& q = queues_[queue_of_[job]];
  q.erase(std::find(q.begin(), q.end(), job));
  queue_of_[job] = -1;
}

void DlasGpu::Schedule(const JobTimeView& view, std::vector<Assignment>* plan) {
  const int last = static_cast<int>(o_.queue_limits.size());
  // Demotion of running jobs (Tiresias moves one queue per scheduling point; the default mode
  // moves as far as the service says). Tiresias demotes in arrival order, which decides the
  // order of the demoted jobs in their new queue.
  std::vector<int> order(view.running->begin(), view.running->end());
  if (view.tiresias_compat)
    std::sort(order.begin(), order.end(), [&](int x, int y) {
      const double sx = view.job(x).spec.submit_time, sy = view.job(y).spec.submit_time;
      return sx != sy ? sx < sy : x < y;
    });
  for (int i : order) {
    while (queue_of_[i] < last && Service(view, i) >= o_.queue_limits[queue_of_[i]]) {
      Move(i, queue_of_[i] + 1);
      if (view.tiresias_compat) break;
    }
  }
  // Starvation promotion of pending jobs that have run before.
  if (o_.starvation_ratio > 0) {
    for (int q = 1; q <= last; ++q) {
      std::vector<int> promote;
      for (int i : queues_[q]) {
        const Job& j = view.job(i);
        double executed = view.RunTime(i) - time_offset_[i];
        if (j.state == JobState::kPending && executed > 0 &&
            view.now - j.wait_since >= executed * o_.starvation_ratio)
          promote.push_back(i);
      }
      for (int i : promote) {
        time_offset_[i] = view.RunTime(i);
        Move(i, 0);
      }
    }
  }
  Filler fill(view, plan);
  for (int q = 0; q <= last; ++q) {
    OrderQueue(view, q, queues_[q]);
    std::vector<int> placed, waiting;
    for (int i : queues_[q]) {
      bool ok = fill.total_free() > 0 && fill.TryPlace(i, ModelChoice::kAgnostic) >= 0;
      (ok ? placed : waiting).push_back(i);
    }
    // Tiresias keeps the jobs that run ahead of those that wait, each group in its order.
    queues_[q] = std::move(placed);
    queues_[q].insert(queues_[q].end(), waiting.begin(), waiting.end());
  }
  KeepModels(view, ModelChoice::kAgnostic, plan);
}

double DlasGpu::NextWakeup(const JobTimeView& view) const {
  const int last = static_cast<int>(o_.queue_limits.size());
  double next = kNever;
  for (int i : *view.running) {
    int q = queue_of_[i];
    if (q >= last) continue;
    const Job& j = view.job(i);
    double n = o_.gputime ? j.spec.num_gpu : 1;
    double t;
    if (view.tiresias_compat) {
      // Tiresias computes ceil((limit - executed_time) / num_gpu) with executed_time in seconds,
      // not GPU-seconds, so its jump often comes late; the demotion then happens on a later event.
      // Its integers divide under Python 2, which floors before the ceil.
      double executed = view.RunTime(i) - time_offset_[i];
      t = view.now + std::floor((o_.queue_limits[q] - executed) / n);
    } else {
      t = view.now + (o_.queue_limits[q] - Service(view, i)) / n;
    }
    next = std::min(next, t);
  }
  return next;
}

namespace {
GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "dlas-gpu",
     .description = "Tiresias discretized 2D-LAS: queues by GPU-seconds, FIFO within a queue, "
                    "optional starvation promotion (NSDI'19)",
     .params = DlasGpu::OptionParams(),
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(auto o, DlasGpu::ParseOptions(p));
      return std::unique_ptr<JobTimePolicy>(new DlasGpu(std::move(o)));
    });
}  // namespace

}  // namespace gpufleet::jobtime
