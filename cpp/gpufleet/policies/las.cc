// Least attained service: preemptive; the job that has received the least service so far runs
// first (Rai, Urvoy-Keller and Biersack, "Analysis of LAS scheduling for job size distributions
// with high variance", SIGMETRICS 2003). Service is GPUs x time by default, the two-dimensional
// form Tiresias uses (Gu et al., NSDI 2019); service="time" counts time only. Continuous LAS, so
// priorities are compared on scheduling points (events or the simulator's tick).
//
// On a host that reports every change (JobTimeView::exact_host) the queues are kept between
// points: a waiting job's service does not move, so waiting jobs sit in ordered sets per GPU count
// (WaitQueue) and a point merges them with the running jobs, whose order from the last point is
// restored by an insertion sort. A point costs O(running jobs + jobs started), not O(active jobs),
// and takes the same decisions as OrderedPolicy (the path every other host takes): the same greedy
// fill in the same order, leaving out only waiting jobs too large for any model's free GPUs.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/ordered.h"
#include "gpufleet/policies/wait_queue.h"

namespace gpufleet::jobtime {
namespace {

class Las : public OrderedPolicy {
 public:
  explicit Las(bool gputime) : gputime_(gputime) {}

  absl::Status Init(const JobTimeView& view) override {
    // Tiresias' tie order (stable sorts of its list) is kept by the straightforward path.
    incremental_ = view.exact_host && !view.tiresias_compat;
    if (!incremental_) return OrderedPolicy::Init(view);
    single_ = view.pool->num_models() == 1;
    Resize(view);
    return absl::OkStatus();
  }
  void OnArrival(int job, const JobTimeView& view) override {
    if (!incremental_) return OrderedPolicy::OnArrival(job, view);
    Resize(view);
    submit_[job] = view.job(job).spec.submit_time;
    gpus_[job] = view.job(job).spec.num_gpu;
    key_[job] = Key(view, job);
    arrived_.push_back(job);
    demand_ += gpus_[job];
  }
  void OnFinish(int job, const JobTimeView& view) override {
    if (!incremental_) return OrderedPolicy::OnFinish(job, view);
    demand_ -= gpus_[job];  // a finished job leaves the running lists lazily
    done_[job] = 1;
  }
  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    if (!incremental_) return OrderedPolicy::Schedule(view, plan);
    if (demand_ <= view.pool->total_gpus() && StartAll(view, plan)) return;
    plan->clear();
    Fill(view, plan);
  }

 protected:
  double Key(const JobTimeView& view, int i) const override {
    return gputime_ ? view.GpuTime(i) : view.RunTime(i);
  }

 private:
  void Resize(const JobTimeView& view) {
    const size_t n = view.jobs->size();
    if (n <= key_.size()) return;
    key_.resize(n, 0);
    submit_.resize(n, 0);
    base_.resize(n, 0);
    since_.resize(n, 0);
    gpus_.resize(n, 0);
    done_.resize(n, 0);
  }

  WaitKey KeyOf(int i) const { return WaitKey{key_[i], submit_[i], i}; }
  bool Less(int a, int b) const { return KeyOf(a) < KeyOf(b); }

  // Every active job fits at once, so the order cannot matter: start the waiting ones, in the
  // order OrderedPolicy keeps them (the last point's order, then arrivals), on the GPUs left free.
  bool StartAll(const JobTimeView& view, std::vector<Assignment>* plan) {
    Filler fill(view, plan, /*from_current=*/true);
    bool all = true;
    queue_.Walk([] { return std::numeric_limits<int>::max(); }, [&](const WaitKey& k) {
      all = fill.TryPlace(k.job, ModelChoice::kFirstFit) >= 0;
      return all;
    });
    for (size_t k = 0; all && k < arrived_.size(); ++k)
      all = fill.TryPlace(arrived_[k], ModelChoice::kFirstFit) >= 0;
    if (!all) return false;
    for (const Assignment& a : *plan) Started(view, a.job);
    queue_.Clear();
    arrived_.clear();
    KeepUnlistedRunning();
    return true;
  }

  // The greedy fill of every active job in (service, submit, index) order, as a full plan.
  void Fill(const JobTimeView& view, std::vector<Assignment>* plan) {
    for (int i : arrived_) queue_.Insert(gpus_[i], KeyOf(i));
    arrived_.clear();
    // Running jobs: the last point's order plus the jobs started since, with their keys now.
    // On one model a running job's counters stay as they were at its start (no migrations), so
    // its key is computed from copies in compact arrays, exactly as JobTimeView computes it.
    auto refresh = [&](std::vector<int>* list) {
      size_t kept = 0;
      for (int i : *list) {
        if (done_[i]) continue;
        key_[i] = single_ ? base_[i] + (view.now - since_[i]) * (gputime_ ? gpus_[i] : 1)
                          : Key(view, i);
        (*list)[kept++] = i;
      }
      list->resize(kept);
    };
    refresh(&running_);
    refresh(&started_);
    SortNearlySorted(&running_);
    std::sort(started_.begin(), started_.end(), [&](int a, int b) { return Less(a, b); });
    const size_t mid = running_.size();
    running_.insert(running_.end(), started_.begin(), started_.end());
    std::inplace_merge(running_.begin(), running_.begin() + mid, running_.end(),
                       [&](int a, int b) { return Less(a, b); });
    started_.clear();

    if (single_) return FillChanges(view, plan);
    Filler fill(view, plan);
    placed_.clear();
    stopped_.clear();
    leaving_.clear();
    size_t r = 0;
    // Running jobs before `bound` (all of them for nullptr) in order: each keeps its GPUs while
    // there is room.
    auto run_until = [&](const WaitKey* bound) {
      for (; r < running_.size(); ++r) {
        const int i = running_[r];
        if (bound != nullptr && !(KeyOf(i) < *bound)) return;
        if (fill.total_free() > 0 && fill.TryPlace(i, ModelChoice::kFirstFit) >= 0)
          placed_.push_back(i);
        else
          stopped_.push_back(i);
      }
    };
    auto most_free = [&] {
      int most = 0;
      for (int m = 0; m < view.pool->num_models(); ++m) most = std::max(most, fill.free(m));
      return most;
    };
    queue_.Walk(most_free, [&](const WaitKey& k) {
      run_until(&k);
      if (fill.total_free() == 0) return false;
      if (fill.TryPlace(k.job, ModelChoice::kFirstFit) >= 0) {
        placed_.push_back(k.job);
        leaving_.push_back(k);
      }
      return fill.total_free() > 0;
    });
    run_until(nullptr);
    for (const WaitKey& k : leaving_) queue_.Erase(gpus_[k.job], k);
    for (int i : stopped_) queue_.Insert(gpus_[i], KeyOf(i));  // preempted: its key is fixed now
    running_.swap(placed_);  // in (service, submit, index) order
    KeepModels(view, ModelChoice::kFirstFit, plan);
  }

  void Started(const JobTimeView& view, int i) {
    const Job& j = view.job(i);
    base_[i] = gputime_ ? j.gpu_time : j.run_time;
    since_[i] = view.now;  // the host starts it now
    started_.push_back(i);
  }

  // One model: the same greedy fill with GPU counts only (every active job fits the model, so it
  // is placed iff its GPUs are left at its turn), answered as a plan of changes: the waiting jobs
  // it starts and, with kStop, the running jobs it preempts.
  void FillChanges(const JobTimeView& view, std::vector<Assignment>* plan) {
    int room = view.pool->total_gpus();
    placed_.clear();
    stopped_.clear();
    leaving_.clear();
    size_t r = 0;
    auto run_until = [&](const WaitKey* bound) {
      for (; r < running_.size(); ++r) {
        const int i = running_[r];
        if (bound != nullptr && !(KeyOf(i) < *bound)) return;
        if (gpus_[i] <= room) {
          room -= gpus_[i];
          placed_.push_back(i);
        } else {
          stopped_.push_back(i);
        }
      }
    };
    queue_.Walk([&] { return room; }, [&](const WaitKey& k) {
      run_until(&k);
      if (gpus_[k.job] <= room) {
        room -= gpus_[k.job];
        placed_.push_back(k.job);
        leaving_.push_back(k);
      }
      return room > 0;
    });
    run_until(nullptr);
    Filler fill(view, plan, /*from_current=*/true);
    for (int i : stopped_) {
      plan->push_back({i, kStop});
      fill.Release(i, 0);
      queue_.Insert(gpus_[i], KeyOf(i));  // preempted: its key is fixed now
    }
    for (const WaitKey& k : leaving_) {
      queue_.Erase(gpus_[k.job], k);
      fill.TryPlace(k.job, ModelChoice::kFirstFit);  // fits: the fill above counted it
    }
    running_.swap(placed_);
    for (const WaitKey& k : leaving_) {
      const Job& j = view.job(k.job);
      base_[k.job] = gputime_ ? j.gpu_time : j.run_time;
      since_[k.job] = view.now;
    }
    KeepUnlistedRunning();
  }

  // Insertion sort: O(n + moves) on a list sorted at the last point but for the running jobs'
  // key increases; too many moves (a long gap between points) fall back to a full sort.
  void SortNearlySorted(std::vector<int>* list) const {
    const size_t n = list->size();
    const size_t budget = 8 * n + 64;
    size_t moves = 0;
    for (size_t k = 1; k < n; ++k) {
      const int x = (*list)[k];
      size_t m = k;
      while (m > 0 && Less(x, (*list)[m - 1])) {
        (*list)[m] = (*list)[m - 1];
        --m;
        if (++moves > budget) {
          (*list)[m] = x;
          std::sort(list->begin(), list->end(), [&](int a, int b) { return Less(a, b); });
          return;
        }
      }
      (*list)[m] = x;
    }
  }

  bool gputime_;
  bool incremental_ = false;
  bool single_ = false;  // one GPU model: plans of changes, keys from cached counters
  std::vector<double> key_, submit_;  // per job: key when last computed, submit time
  std::vector<double> base_, since_;  // per running job: service and time at its start
  std::vector<int> gpus_;
  std::vector<uint8_t> done_;
  int64_t demand_ = 0;          // GPUs asked by the active jobs
  WaitQueue queue_;             // pending jobs as of the last point, by their fixed keys
  std::vector<int> arrived_;    // arrivals since the last point, in arrival order
  std::vector<int> running_;    // running jobs as of the last full fill, in key order then
  std::vector<int> started_;    // jobs started by StartAll since
  std::vector<int> placed_, stopped_;  // scratch of Fill
  std::vector<WaitKey> leaving_;
};
GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "las",
     .description = "least attained service, preemptive",
     .params = {{"service", ParamType::kString, "gpu_time",
                 "attained service in \"gpu_time\" (GPU-seconds) or \"time\" (seconds)"}},
     .capabilities = {"preemptive"}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(std::string s, p.Get<std::string>("service"));
      if (s != "gpu_time" && s != "time")
        return absl::InvalidArgumentError("las: service must be \"gpu_time\" or \"time\", got \"" +
                                          s + "\"");
      return std::unique_ptr<JobTimePolicy>(new Las(s == "gpu_time"));
    });

}  // namespace
}  // namespace gpufleet::jobtime
