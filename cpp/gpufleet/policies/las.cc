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
// On one GPU model a contended point costs O((changes + tail) x log): running jobs sit in one
// ordered set per GPU count (RunClass; keys of one count grow at one rate, so their order holds
// between points), and the fill reads only the tail of the running order where a preemption can
// happen (see FillChanges).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

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
    const JobSpec& spec = view.job(job).spec;
    max_gpus_ = std::max(max_gpus_, spec.num_gpu);
    demand_ += spec.num_gpu;
    arrived_.push_back(job);
    if (single_) {
      arrived_keys_.push_back(WaitKey{Key(view, job), spec.submit_time, job});
      return;
    }
    submit_[job] = spec.submit_time;
    gpus_[job] = spec.num_gpu;
    key_[job] = Key(view, job);
  }
  void OnFinish(int job, const JobTimeView& view) override {
    if (!incremental_) return OrderedPolicy::OnFinish(job, view);
    demand_ -= view.job(job).spec.num_gpu;
    if (single_) return EraseRunning(view, job);
    done_[job] = 1;  // a finished job leaves the running lists lazily
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
    // One model keeps nothing per job: waiting jobs' keys sit in the queue, running jobs' counters
    // in their RunClass entries (a run of millions of jobs then costs only the host's records).
    if (single_ || n <= key_.size()) return;
    key_.resize(n, 0);
    submit_.resize(n, 0);
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
      all = fill.TryPlace(k.job, ModelChoice::kAgnostic) >= 0;
      return all;
    });
    for (size_t k = 0; all && k < arrived_.size(); ++k)
      all = fill.TryPlace(arrived_[k], ModelChoice::kAgnostic) >= 0;
    if (!all) return false;
    for (const Assignment& a : *plan) Started(view, a.job);
    queue_.Clear();
    arrived_.clear();
    arrived_keys_.clear();
    KeepUnlistedRunning();
    return true;
  }

  // The greedy fill of every active job in (service, submit, index) order, as a full plan.
  void Fill(const JobTimeView& view, std::vector<Assignment>* plan) {
    if (single_) {
      for (const WaitKey& k : arrived_keys_) queue_.Insert(view.job(k.job).spec.num_gpu, k);
      arrived_.clear();
      arrived_keys_.clear();
      return FillChanges(view, plan);
    }
    for (int i : arrived_) queue_.Insert(gpus_[i], KeyOf(i));
    arrived_.clear();
    // Running jobs: the last point's order plus the jobs started since, with their keys now.
    auto refresh = [&](std::vector<int>* list) {
      size_t kept = 0;
      for (int i : *list) {
        if (done_[i]) continue;
        key_[i] = Key(view, i);
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
        if (fill.total_free() > 0 && fill.TryPlace(i, ModelChoice::kAgnostic) >= 0)
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
      if (fill.TryPlace(k.job, ModelChoice::kAgnostic) >= 0) {
        placed_.push_back(k.job);
        leaving_.push_back(k);
      }
      return fill.total_free() > 0;
    });
    run_until(nullptr);
    for (const WaitKey& k : leaving_) queue_.Erase(gpus_[k.job], k);
    for (int i : stopped_) queue_.Insert(gpus_[i], KeyOf(i));  // preempted: its key is fixed now
    running_.swap(placed_);  // in (service, submit, index) order
    KeepModels(view, ModelChoice::kAgnostic, plan);
  }

  void Started(const JobTimeView& view, int i) {
    const Job& j = view.job(i);
    if (single_) return InsertRunning(view, i, gputime_ ? j.gpu_time : j.run_time);
    started_.push_back(i);
  }

  // Running jobs of one GPU count on one model, ordered by their key now (then submit time and
  // index, as WaitKey). Every key of the class grows at the same rate, so the order found at
  // insertion holds at every later point and the set never needs re-sorting.
  struct RunEntry {
    double base, since, submit;  // key = base + (now - since) x rate, as Fill computes it
    int job;
  };
  struct RunLess {
    const double* now;
    double rate;
    double KeyAt(const RunEntry& e) const { return e.base + (*now - e.since) * rate; }
    bool operator()(const RunEntry& a, const RunEntry& b) const {
      return WaitKey{KeyAt(a), a.submit, a.job} < WaitKey{KeyAt(b), b.submit, b.job};
    }
  };
  using RunSet = std::set<RunEntry, RunLess>;
  struct RunClass {
    int gpus;
    RunSet set;
  };

  RunClass& ClassOf(int gpus) {
    for (RunClass& c : classes_)
      if (c.gpus == gpus) return c;
    const double rate = gputime_ ? gpus : 1;
    return classes_.emplace_back(RunClass{gpus, RunSet(RunLess{&now_, rate})});
  }
  void InsertRunning(const JobTimeView& view, int i, double base) {
    now_ = view.now;  // the host starts it now
    const JobSpec& spec = view.job(i).spec;
    RunClass& c = ClassOf(spec.num_gpu);
    running_at_[i] = c.set.insert(RunEntry{base, view.now, spec.submit_time, i}).first;
  }
  void EraseRunning(const JobTimeView& view, int i) {
    auto it = running_at_.find(i);
    if (it == running_at_.end()) return;  // never started by this policy
    ClassOf(view.job(i).spec.num_gpu).set.erase(it->second);
    running_at_.erase(it);
  }

  // The running jobs' order read from its end (highest key first), a k-way merge of the classes.
  struct TailEntry {
    WaitKey key;
    int gpus;
    int64_t sum;  // GPUs of this entry and every entry before it (higher keys)
  };
  void StartTail() {
    tail_.clear();
    tail_cursor_.clear();
    for (RunClass& c : classes_) tail_cursor_.push_back(c.set.rbegin());
  }
  // Appends the next-highest running job; false when every running job is in the tail.
  bool PullTail() {
    int best = -1;
    WaitKey best_key{};
    for (size_t c = 0; c < classes_.size(); ++c) {
      if (tail_cursor_[c] == classes_[c].set.rend()) continue;
      const RunEntry& e = *tail_cursor_[c];
      WaitKey k{classes_[c].set.key_comp().KeyAt(e), e.submit, e.job};
      if (best < 0 || best_key < k) {
        best = static_cast<int>(c);
        best_key = k;
      }
    }
    if (best < 0) return false;
    ++tail_cursor_[best];
    const int g = classes_[best].gpus;
    tail_.push_back({best_key, g, (tail_.empty() ? 0 : tail_.back().sum) + g});
    return true;
  }

  // One model: the same greedy fill with GPU counts only (every active job fits the model, so it
  // is placed iff its GPUs are left at its turn), answered as a plan of changes: the waiting jobs
  // it starts and, with kStop, the running jobs it preempts.
  //
  // Without visiting every running job: with F GPUs free before the point and D the GPUs taken by
  // waiting jobs placed so far minus those given back by running jobs stopped so far, the room at
  // a running job r's turn is F + S(r) - D, where S(r) sums the GPUs of r and every running job
  // after it. So r can be stopped only where S(r) - g(r) < D - F: in the tail of the running order.
  // The tail is read from the end until its GPUs reach D - F + G (G: the largest GPU count of any
  // job), which is extended whenever D grows; before the tail every running job keeps its GPUs and
  // the room is at least G, so every waiting job visited there is placed. Inside the tail the room
  // is known exactly. The result is the same fill in the same order.
  void FillChanges(const JobTimeView& view, std::vector<Assignment>* plan) {
    now_ = view.now;
    const int64_t free_before = view.pool->total_gpus() - (*view.busy)[0];
    int64_t taken = 0;  // D above
    StartTail();
    bool complete = false;
    int cursor = -1;  // tail_[0..cursor] are the running jobs after the fill's position
    bool passed_any = false;
    WaitKey last{};  // the last waiting job visited
    auto extend = [&] {
      while (!complete && (tail_.empty() ? 0 : tail_.back().sum) < taken - free_before + max_gpus_) {
        if (!PullTail()) {
          complete = true;
          break;
        }
        // Entries below the fill's position were passed, and kept (the room there was >= G).
        if (cursor == static_cast<int>(tail_.size()) - 2 && (!passed_any || last < tail_.back().key))
          cursor = static_cast<int>(tail_.size()) - 1;
      }
    };
    // True when every running job after the fill's position is in tail_[0..cursor].
    auto exact = [&] { return complete || cursor < static_cast<int>(tail_.size()) - 1; };
    auto room = [&]() -> int64_t {
      return free_before + (cursor >= 0 ? tail_[cursor].sum : 0) - taken;
    };
    stopped_keys_.clear();
    leaving_.clear();
    auto run_until = [&](const WaitKey* bound) {
      for (; cursor >= 0; --cursor) {
        const TailEntry& e = tail_[cursor];
        if (bound != nullptr && !(e.key < *bound)) return;
        if (e.gpus > room()) {
          stopped_keys_.push_back(e.key);  // preempted: its key is fixed now
          taken -= e.gpus;
        }
      }
    };
    extend();
    queue_.Walk(
        [&]() -> int {
          return exact() ? static_cast<int>(std::min<int64_t>(room(), std::numeric_limits<int>::max()))
                         : std::numeric_limits<int>::max();
        },
        [&](const WaitKey& k) {
          run_until(&k);
          last = k;
          passed_any = true;
          const int gpus = view.job(k.job).spec.num_gpu;
          if (!exact() || gpus <= room()) {
            taken += gpus;
            leaving_.push_back(k);
            extend();
          }
          return !exact() || room() > 0;
        });
    run_until(nullptr);

    Filler fill(view, plan, /*from_current=*/true);
    for (const WaitKey& k : stopped_keys_) {
      plan->push_back({k.job, kStop});
      fill.Release(k.job, 0);
      EraseRunning(view, k.job);
      queue_.Insert(view.job(k.job).spec.num_gpu, k);
    }
    for (const WaitKey& k : leaving_) {
      queue_.Erase(view.job(k.job).spec.num_gpu, k);
      fill.TryPlace(k.job, ModelChoice::kAgnostic);  // fits: the fill above counted it
      const Job& j = view.job(k.job);
      InsertRunning(view, k.job, gputime_ ? j.gpu_time : j.run_time);
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
  std::vector<int> gpus_;
  std::vector<uint8_t> done_;
  int64_t demand_ = 0;          // GPUs asked by the active jobs
  WaitQueue queue_;             // pending jobs as of the last point, by their fixed keys
  std::vector<int> arrived_;    // arrivals since the last point, in arrival order
  std::vector<int> running_;    // running jobs as of the last full fill, in key order then
  std::vector<int> started_;    // jobs started by StartAll since
  std::vector<int> placed_, stopped_;  // scratch of Fill
  std::vector<WaitKey> leaving_;
  std::vector<WaitKey> arrived_keys_, stopped_keys_;  // one model: keys of arrived_, of stops
  // One model (single_): running jobs per GPU count, where each one sits, and the fill's tail.
  double now_ = 0;  // the time RunLess compares keys at
  int max_gpus_ = 0;
  std::deque<RunClass> classes_;  // a deque: sets never move, iterators stay valid
  absl::flat_hash_map<int, RunSet::iterator> running_at_;
  std::vector<TailEntry> tail_;
  std::vector<RunSet::reverse_iterator> tail_cursor_;
};
GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "las",
     .description = "least attained service, preemptive",
     .params = {{.name = "service", .type = ParamType::kString, .default_value = "gpu_time",
                 .help = "attained service in GPU-seconds (gpu_time) or seconds (time)",
                 .one_of = {"gpu_time", "time"}}},
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(std::string s, p.Get<std::string>("service"));
      return std::unique_ptr<JobTimePolicy>(new Las(s == "gpu_time"));
    });

}  // namespace
}  // namespace gpufleet::jobtime
