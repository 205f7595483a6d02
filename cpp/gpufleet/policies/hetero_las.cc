// Heterogeneity-aware LAS with a two-level feedback queue (docs/simulator.md; builds on the 2D-LAS
// of Tiresias, Gu et al., NSDI 2019, and the per-model throughputs of Gavel, Narayanan et al.,
// OSDI 2020). Priority = attained service, lower is better: GPU-seconds x the model's performance
// factor. New jobs enter the high queue Q1 (ordered by service, then submit time). On every
// scheduling point:
//  1. a running Q1 job whose service exceeds (mean service of running jobs) x
//     priority_threshold_ratio moves to the low queue Q2 and loses its GPUs;
//  2. a Q2 job whose waiting time / running time exceeds starve_threshold_ratio returns to Q1 with
//     its service and history forgotten;
//  3. Q1 is scanned from the head, skipping jobs that do not fit (GPU count, memory), each placed
//     on the best-performing free model k; then the swap with a running job i (n_i <= n_s, on
//     model j) of largest positive gain n_i (m_ik - m_ij) + n_s (m_sj - m_sk) is applied, where m
//     are the jobs' speeds normalised to the reference model;
//  4. Q2 is served with what is left (work-conserving), running Q2 jobs first;
//  5. (upgrade=true, an addition for the "GPUs became available" event) a job in the plan moves
//     to a faster model that still has free GPUs when that finishes it sooner even after the
//     restore delay; otherwise a job swapped onto a slow model would stay there to the end.
// Migrations and resumes pay the simulator's restore_delay. aware=false is the ablation: same
// queues, plain GPU-seconds, first-fit models, no swaps.
// Cost of a scheduling point: the structures below are kept between points (the simulator reports
// every change through the plan it applies, OnArrival and OnFinish; JobTimeView::exact_host), so a
// point reads only the jobs whose state changed since the last one and the few it can change.
// Waiting jobs sit in ordered sets per GPU count with their (fixed) priority, so the scans of
// steps 3 and 4 visit only jobs that can still fit; starving Q2 jobs come from a heap of the times
// their ratio crosses the threshold. Running jobs sit in classes of one queue, model and GPU count
// (running_classes.h), whose order holds between points: the running mean is a sum kept as jobs
// start and stop (the straightforward sum decides whenever a service lies within its rounding of
// the threshold), demotion reads each class from its largest service, the swap search reads one
// job per class and distinct gain, the upgrade pass only jobs faster on a model with room, and
// step 4 reads only the tails of models left short (KeepRunningQ2). The answer is a plan of
// changes. Every decision is taken by the same comparison on the same numbers as the
// straightforward algorithm (tests/cpp/reference/hetero_las_reference.h; a test compares the two),
// which the agnostic ablation and hosts that do not report every change still run (FillFull).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/job_time_policy.h"
#include "gpufleet/policies/running_classes.h"
#include "gpufleet/policies/running_order.h"
#include "gpufleet/policies/wait_queue.h"

namespace gpufleet::jobtime {
namespace {

using Key = WaitKey;

enum Where : uint8_t { kNowhere, kWaitQ1, kWaitQ2, kRunQ1, kRunQ2 };

class HeteroLas : public JobTimePolicy {
 public:
  HeteroLas(double priority_ratio, double starve_ratio, bool swap, bool aware, bool upgrade)
      : priority_ratio_(priority_ratio), starve_ratio_(starve_ratio), swap_(swap && aware),
        aware_(aware), upgrade_(upgrade && aware) {}

  absl::Status Init(const JobTimeView& view) override {
    Resize(view);
    return absl::OkStatus();
  }
  void OnArrival(int job, const JobTimeView& view) override {
    Resize(view);  // the engine's ledger grows with arrivals
    active_pos_[job] = static_cast<int>(active_.size());
    active_.push_back(job);
    CacheSpec(view, job);
    Touch(job);
  }
  void OnFinish(int job, const JobTimeView&) override {
    Remove(job);
    CountFaster(job, -1);
    const int p = active_pos_[job];
    active_[p] = active_.back();
    active_pos_[active_[p]] = p;
    active_.pop_back();
    active_pos_[job] = -1;
  }

  void Schedule(const JobTimeView& view, std::vector<Assignment>* plan) override {
    if (!view.exact_host || num_models_ != view.pool->num_models()) {
      Rebuild(view);
    } else {
      for (int i : touched_) {
        touched_flag_[i] = 0;
        Remove(i);
        Place(view, i);
      }
      touched_.clear();
    }
    // 1. Demote running jobs far above the running mean. 2. Promote starving Q2 jobs.
    Demote(view);
    Promote(view);
    // 3-5. The assignment: on a host that applies plans of changes, built from the classes
    // (running jobs that keep their GPUs are not listed); elsewhere in full.
    full_.clear();
    swapped_.clear();
    upgraded_.clear();
    Filler fill(view, &full_, view.exact_host);
    const bool incremental = view.exact_host && aware_ && positions_kept_;
    if (incremental)
      FillChanges(view, fill);
    else
      FillFull(view, fill);
    Answer(view, plan, incremental);
    for (int i : swapped_) swapped_flag_[i] = 0;
    for (int i : q2_read_) read_flag_[i] = 0;
  }

 private:
  // ---- Steps 3 to 5 ----

  // The straightforward fill: every running job in queue order.
  void FillFull(const JobTimeView& view, Filler& fill) {
    SortRunning(view.now);
    // 3. Running Q1 jobs keep their GPUs; then Q1's waiting jobs, each followed by a swap search.
    // On an exact host the filler starts from the host's busy counts and gives back the GPUs of
    // the running jobs outside Q1's running set.
    if (view.exact_host) {
      for (int i : demoted_) fill.Release(i, c_[i].model);
      for (int i : run_q2_) fill.Release(i, c_[i].model);
      for (int i : run_q1_) full_.push_back({i, c_[i].model});
    } else {
      for (int i : run_q1_) fill.Take(i, c_[i].model);
    }
    prefix_ = full_.size();
    const ModelChoice choice = aware_ ? ModelChoice::kFastest : ModelChoice::kAgnostic;
    WalkQ1(fill, choice, [&](size_t s_pos) { TrySwapInPlan(view, fill, s_pos); });
    // 4. Q2: its running jobs first (each keeps its model while it fits), then its waiting ones.
    q2_read_ = run_q2_;
    if (fill.total_free() > 0) {
      for (int i : run_q2_) {
        if (fill.total_free() == 0) break;
        fill.TryPlace(i, choice);
      }
    }
    WalkQ2(fill, choice);
    if (!aware_) KeepModels(view, ModelChoice::kAgnostic, &full_);
    // 5. Upgrades, in plan order.
    if (upgrade_ && fill.total_free() > 0) {
      RefreshMovable(fill);
      for (size_t p = 0; p < full_.size(); ++p) {
        const int m = TryUpgrade(view, fill, full_[p].job, full_[p].model);
        if (m < 0) continue;
        full_[p].model = m;
        if (p < prefix_) upgraded_.push_back({full_[p].job, m});
      }
    }
  }

  // The same steps, reading only what can change. The plan, in the order the straightforward fill
  // builds it, is: the running Q1 jobs not swapped (not listed, in queue order), full_[0, q1_end),
  // the running Q2 jobs in queue order (those step 4 did not read are not listed, the others are
  // full_[q1_end, q2_end)), then full_[q2_end, end).
  void FillChanges(const JobTimeView& view, Filler& fill) {
    lists_kept_ = false;
    prefix_ = 0;
    for (int i : demoted_) fill.Release(i, c_[i].model);
    for (int m = 0; m < num_models_; ++m) fill.ReleaseGpus(m, q2_gpus_[m]);
    WalkQ1(fill, ModelChoice::kFastest, [&](size_t s_pos) { TrySwap(view, fill, s_pos); });
    const size_t q1_end = full_.size();
    KeepRunningQ2(view, fill);
    const size_t q2_end = full_.size();
    WalkQ2(fill, ModelChoice::kFastest);
    if (upgrade_ && fill.total_free() > 0) {
      RefreshMovable(fill);
      UpgradeRunning(view, fill, 0, 0, 0);
      for (size_t p = 0; p < q1_end; ++p) UpgradeListed(view, fill, p);
      UpgradeRunning(view, fill, 1, q1_end, q2_end);
      for (size_t p = q2_end; p < full_.size(); ++p) UpgradeListed(view, fill, p);
    }
  }

  template <class AfterStart>
  void WalkQ1(Filler& fill, ModelChoice choice, AfterStart after_start) {
    auto most_free = [&] {
      int most = 0;
      for (int m = 0; m < num_models_; ++m) most = std::max(most, fill.free(m));
      return most;
    };
    q1_.Walk(most_free, [&](const Key& k) {
      if (fill.TryPlace(k.job, choice) >= 0 && swap_) after_start(full_.size() - 1);
      return fill.total_free() > 0;
    });
  }

  void WalkQ2(Filler& fill, ModelChoice choice) {
    if (fill.total_free() == 0) return;
    auto most_free = [&] {
      int most = 0;
      for (int m = 0; m < num_models_; ++m) most = std::max(most, fill.free(m));
      return most;
    };
    q2_.Walk(most_free, [&](const Key& k) {
      fill.TryPlace(k.job, choice);
      return fill.total_free() > 0;
    });
  }

  // Step 4's running Q2 jobs: in queue order, each keeps its model while that has room, else
  // goes to the fastest model with room, else stops. Every one is first counted as keeping its
  // GPUs; a model then left short (free < 0) must lose some of its last jobs, so only the tail of
  // such a model is read (a "stream"), and a model that a moved job leaves short opens one from
  // there. The free GPUs each read job sees are what the straightforward loop sees: the counted
  // ones plus what the jobs after it on each model hold (LaterGpus).
  void KeepRunningQ2(const JobTimeView& view, Filler& fill) {
    const double now = view.now;
    q2_read_.clear();
    forward_.clear();
    stream_model_.clear();
    stream_open_.assign(num_models_, 0);
    stream_left_.assign(num_models_, 0);
    for (int m = 0; m < num_models_; ++m) fill.TakeGpus(m, q2_gpus_[m]);
    for (int m = 0; m < num_models_; ++m)
      if (fill.free(m) < 0) OpenStream(now, fill, m, -1);
    while (true) {
      Order::Forward* head = nullptr;
      for (size_t k = 0; k < forward_.size(); ++k) {
        Order::Forward& c = forward_[k];
        if (c.head() < 0 || !stream_open_[stream_model_[k]]) continue;
        if (head == nullptr || order_.Before(c.service, c.head(), head->service, head->head()))
          head = &c;
      }
      if (head == nullptr) return;
      const int x = head->head();
      order_.Advance(head, now);
      const int m = c_[x].model, g = c_[x].gpus;
      const bool keeps = fill.free(m) + stream_left_[m] >= g;
      stream_left_[m] -= g;
      if (keeps) continue;
      q2_read_.push_back(x);
      read_flag_[x] = 1;
      fill.ReleaseGpus(m, g);
      if (fill.free(m) >= 0) CloseStream(m);  // the rest of it keeps its GPUs
      const int to = PlaceRead(now, fill, x);
      if (to >= 0 && fill.free(to) < 0) {
        // Short now, or shorter: its tail after x is read afresh.
        CloseStream(to);
        OpenStream(now, fill, to, x);
      }
    }
  }

  void CloseStream(int model) {
    if (!stream_open_[model]) return;
    stream_open_[model] = 0;
    for (size_t k = 0; k < forward_.size(); ++k)
      if (stream_model_[k] == model) Order::Close(&forward_[k]);
  }

  // Opens the stream of `model` (left short by `free` < 0) at the first of its last running Q2
  // jobs (after job `after`, when given) that together hold the shortfall.
  void OpenStream(double now, Filler& fill, int model, int after) {
    const int shortfall = -fill.free(model);
    int held = 0, start = -1;
    order_.Descending(classes_, now, /*q=*/1, model, [&](int i) {
      if (after >= 0 && !order_.Before(now, after, i)) return false;
      held += c_[i].gpus;
      start = i;
      return held < shortfall;
    });
    if (start < 0) return;
    stream_open_[model] = 1;
    stream_left_[model] = held;
    const double s_start = RunningService(start, now);
    for (RunClass& cl : classes_.all())
      if (cl.model == model && !cl.run[1].empty()) {
        forward_.emplace_back();
        stream_model_.push_back(model);
        order_.Seek(&forward_.back(), cl.run[1], cl.rate, now, start, s_start, false);
      }
  }

  // GPUs of `model` held by its running Q2 jobs after job x in queue order (read from the last
  // one back), or at least `enough` of them.
  int LaterGpus(double now, int model, int x, int enough) {
    int held = 0;
    if (enough <= 0) return 0;
    order_.Descending(classes_, now, /*q=*/1, model, [&](int i) {
      if (!order_.Before(now, x, i)) return false;
      held += c_[i].gpus;
      return held < enough;
    });
    return held;
  }

  // Places read job x (it lost its GPUs) as the straightforward loop would at its turn, when
  // each model's free GPUs include those still held by the jobs after x: the fastest model with
  // room; models tied for the fastest are drawn by their free GPUs, counted exactly.
  int PlaceRead(double now, Filler& fill, int x) {
    const int m_x = c_[x].model, g = c_[x].gpus;
    std::vector<int>& added = added_gpus_;
    added.assign(num_models_, 0);
    for (int m = 0; m < num_models_; ++m) {
      added[m] = m == m_x ? stream_left_[m] : LaterGpus(now, m, x, g - fill.free(m));
      fill.ReleaseGpus(m, added[m]);
    }
    // Exact counts where the choice can depend on them: models tied for the fastest.
    double fastest = -1;
    for (int m = 0; m < num_models_; ++m)
      if (fill.Fits(x, m) && Speed(x, m) > fastest) fastest = Speed(x, m);
    int tied = 0;
    for (int m = 0; m < num_models_; ++m) tied += fill.Fits(x, m) && Speed(x, m) == fastest;
    if (tied > 1)
      for (int m = 0; m < num_models_; ++m) {
        if (m == m_x || !fill.Fits(x, m) || Speed(x, m) != fastest) continue;
        const int all = LaterGpus(now, m, x, std::numeric_limits<int>::max());
        fill.ReleaseGpus(m, all - added[m]);
        added[m] = all;
      }
    const int to = fill.TryPlace(x, ModelChoice::kFastest);
    for (int m = 0; m < num_models_; ++m) fill.TakeGpus(m, added[m]);
    return to;
  }

  // The straightforward fill's running lists, in queue order. Kept between its points (a job
  // joins its list when it starts and leaves lazily) and re-sorted by an insertion sort, since
  // services moved only a little; rebuilt from the classes after points that did not keep them.
  void SortRunning(double now) {
    const Where kinds[2] = {kRunQ1, kRunQ2};
    std::vector<int>* lists[2] = {&run_q1_, &run_q2_};
    if (!lists_kept_) {
      for (std::vector<int>* list : lists)
        for (int i : *list) listed_[i] = kNowhere;
      for (int q = 0; q < 2; ++q) {
        order_.Sorted(classes_, now, q, lists[q]);
        for (int i : *lists[q]) listed_[i] = kinds[q];
      }
      lists_kept_ = true;
      return;
    }
    for (int q = 0; q < 2; ++q) {
      std::vector<std::pair<double, int>>& keyed = sort_scratch_;
      keyed.clear();
      for (int i : *lists[q]) {
        if (c_[i].where == kinds[q])
          keyed.push_back({RunningService(i, now), i});
        else if (listed_[i] == kinds[q])
          listed_[i] = kNowhere;
      }
      for (size_t k = 1; k < keyed.size(); ++k) {
        const auto x = keyed[k];
        size_t m = k;
        for (; m > 0 && order_.Before(x.first, x.second, keyed[m - 1].first, keyed[m - 1].second);
             --m)
          keyed[m] = keyed[m - 1];
        keyed[m] = x;
      }
      lists[q]->clear();
      for (const auto& [service, i] : keyed) lists[q]->push_back(i);
    }
  }

  // ---- Swaps ----

  // Whether running job i on model j may trade models with the new job s on model k, and the gain.
  bool SwapGain(const JobTimeView& view, const Filler& fill, int i, int j, int s, int k,
                double* gain) const {
    const int ni = c_[i].gpus, ns = c_[s].gpus;
    if (j == k || ni > ns) return false;
    if (fill.free(j) + ni < ns || !(Speed(i, k) > 0) || !(Speed(s, j) > 0)) return false;
    const GpuModel& mj = view.pool->model(j);
    const GpuModel& mk = view.pool->model(k);
    if ((mj.memory_gib > 0 && c_[s].mem > mj.memory_gib) ||
        (mk.memory_gib > 0 && c_[i].mem > mk.memory_gib))
      return false;
    *gain = ni * (Speed(i, k) - Speed(i, j)) + ns * (Speed(s, j) - Speed(s, k));
    return true;
  }

  // full_[s_pos] is the new job s on model k; trades models with the running Q1 job of largest
  // gain (the earliest in the plan among equal gains), when the gain is positive.
  void TrySwapInPlan(const JobTimeView& view, Filler& fill, size_t s_pos) {
    double best_gain = 1e-12;
    const size_t best = BestListedSwap(view, fill, s_pos, &best_gain);
    if (best < full_.size()) ApplySwap(fill, s_pos, full_[best].job, best);
  }

  // The listed running Q1 job before s_pos whose swap with full_[s_pos] gains more than
  // *best_gain (the earliest among equal gains; *best_gain rises to it), or full_.size().
  size_t BestListedSwap(const JobTimeView& view, const Filler& fill, size_t s_pos,
                        double* best_gain) const {
    const int s = full_[s_pos].job, k = full_[s_pos].model;
    size_t best = full_.size();
    for (size_t p = 0; p < s_pos; ++p) {
      const int i = full_[p].job;
      double gain;
      // Running jobs in the plan are the running Q1 jobs (waiting ones are kWaitQ1 here).
      if (c_[i].where != kRunQ1 || !SwapGain(view, fill, i, full_[p].model, s, k, &gain)) continue;
      if (gain > *best_gain) {
        *best_gain = gain;
        best = p;
      }
    }
    return best;
  }

  // The same choice when running Q1 jobs are not listed: they come first in the plan, in queue
  // order, and are found through their classes' gain index, one per class and distinct gain.
  void TrySwap(const JobTimeView& view, Filler& fill, size_t s_pos) {
    const int s = full_[s_pos].job, k = full_[s_pos].model, ns = c_[s].gpus;
    const double now = view.now;
    double best_gain = 1e-12;
    int best_job = -1;
    for (RunClass& cl : classes_.all()) {
      if (cl.model == k || cl.gpus > ns || fill.free(cl.model) + cl.gpus < ns) continue;
      const std::set<GainKey>& index = cl.swap_to[k];
      auto it = index.begin();
      while (it != index.end()) {
        // One job per distinct gain: the level's first in queue order that is not listed.
        const double level = it->neg_gain;
        int first = -1;
        while (first < 0 && it != index.end() && it->neg_gain == level) {
          double prev = it->run.c;
          for (; it != index.end() && it->neg_gain == level &&
                 std::abs(it->run.c - prev) <= Order::NearTie(prev, cl.rate, now);
               ++it) {
            prev = it->run.c;
            const int i = it->run.job;
            if (!swapped_flag_[i] && (first < 0 || order_.Before(now, i, first))) first = i;
          }
        }
        if (first >= 0) {
          double gain;
          if (!SwapGain(view, fill, first, cl.model, s, k, &gain)) break;  // fails for the class
          if (gain < best_gain || (gain == best_gain && best_job < 0)) break;  // so do the rest
          if (gain > best_gain || order_.Before(now, first, best_job)) {
            best_gain = gain;
            best_job = first;
          }
        }
        it = index.upper_bound(GainKey{level, RunKey::Largest()});
      }
    }
    // Listed ones (swapped before) come after every unlisted one: only a larger gain wins.
    const size_t best = BestListedSwap(view, fill, s_pos, &best_gain);
    if (best < full_.size())
      ApplySwap(fill, s_pos, full_[best].job, best);
    else if (best_job >= 0)
      ApplySwap(fill, s_pos, best_job, full_.size());
  }

  // Job i (listed at `listed`, or not listed) and the new job at s_pos trade models.
  void ApplySwap(Filler& fill, size_t s_pos, int i, size_t listed) {
    const int s = full_[s_pos].job, k = full_[s_pos].model;
    const int j = listed < full_.size() ? full_[listed].model : c_[i].model;
    full_.erase(full_.begin() + s_pos);
    if (listed < full_.size()) {
      full_.erase(full_.begin() + listed);
      if (listed < prefix_) --prefix_;
    }
    swapped_.push_back(i);
    swapped_flag_[i] = 1;
    fill.Release(i, j);
    fill.Release(s, k);
    fill.Take(i, k);
    fill.Take(s, j);
  }

  // ---- Upgrades ----

  // movable_[from]: some model `to` has room for the smallest job and some active job runs
  // faster there than on `from`. Without it no entry on `from` can move.
  void RefreshMovable(const Filler& fill) {
    movable_.assign(num_models_, 0);
    for (int from = 0; from < num_models_; ++from)
      for (int to = 0; to < num_models_; ++to)
        if (to != from && faster_count_[from * num_models_ + to] > 0 && fill.free(to) >= min_gpus_)
          movable_[from] = 1;
  }

  // A plan entry (job i on `from`) moves to a faster model that still has free GPUs when that
  // finishes it sooner even after the restore delay. Returns the new model, or -1.
  int TryUpgrade(const JobTimeView& view, Filler& fill, int i, int from) {
    if (fill.total_free() == 0 || !movable_[from]) return -1;
    bool any = false;
    for (int m = 0; m < num_models_ && !any; ++m)
      any = m != from && c_[i].gpus <= fill.free(m) && Speed(i, m) > Speed(i, from);
    if (!any) return -1;
    const Job& j = view.job(i);
    const double left = view.RemainingWork(i);
    double best_time = left / j.Speed(from);
    int best = -1;
    for (int m = 0; m < num_models_; ++m) {
      if (m == from || !fill.Fits(i, m)) continue;
      double t = left / j.Speed(m) + (j.state == JobState::kRunning ? view.restore_delay : 0);
      if (t < best_time) {
        best_time = t;
        best = m;
      }
    }
    if (best < 0) return -1;
    fill.Release(i, from);
    fill.Take(i, best);  // appends an entry: the caller keeps the job where it was
    full_.pop_back();
    RefreshMovable(fill);
    return best;
  }

  bool UpgradeListed(const JobTimeView& view, Filler& fill, size_t p) {
    const int m = TryUpgrade(view, fill, full_[p].job, full_[p].model);
    if (m >= 0) full_[p].model = m;
    return m >= 0;
  }

  // The upgrade pass over the running jobs of queue q, in queue order: those not listed (only
  // the ones that run faster on a model with room for them can move) merged with the listed
  // entries full_[p, p_end).
  void UpgradeRunning(const JobTimeView& view, Filler& fill, int q, size_t p, size_t p_end) {
    const double now = view.now;
    int last = -1;  // the last job handled
    for (bool again = true; again;) {
      again = false;
      forward_.clear();
      const double s_last = last >= 0 ? RunningService(last, now) : 0;
      for (RunClass& cl : classes_.all())
        for (int to = 0; to < num_models_; ++to) {
          const std::set<RunKey>& jobs = cl.faster_on[q][to];
          if (to == cl.model || jobs.empty() || fill.free(to) < cl.gpus) continue;
          forward_.emplace_back();
          if (last >= 0)
            order_.Seek(&forward_.back(), jobs, cl.rate, now, last, s_last, true);
          else
            order_.Start(&forward_.back(), jobs.begin(), jobs.end(), cl.rate, now);
        }
      int seen = -1;
      order_.Merge(now, &forward_, [&](int i) {
        if (i == seen || (q == 0 ? swapped_flag_[i] : read_flag_[i])) return true;  // listed
        seen = i;
        while (p < p_end && order_.Before(now, full_[p].job, i)) {
          last = full_[p].job;
          if (UpgradeListed(view, fill, p++)) return !(again = true);  // free counts changed
        }
        last = i;
        const int m = TryUpgrade(view, fill, i, c_[i].model);
        if (m < 0) return true;
        upgraded_.push_back({i, m});
        return !(again = true);
      });
      // No unlisted job is left to move: the listed entries that remain.
      while (!again && p < p_end) {
        last = full_[p].job;
        again = UpgradeListed(view, fill, p++);
      }
    }
  }

  // ---- The answer ----

  // Hands full_ to the host: on an exact host as a plan of changes (KeepUnlistedRunning), whose
  // stops and migrations are listed in the host's running order and whose starts keep their order
  // in full_, so the host applies them in the same sequence as the full plan (its running order,
  // finish times and device choices stay the same); elsewhere the full plan. Jobs whose state
  // changes are read again on the next point.
  void Answer(const JobTimeView& view, std::vector<Assignment>* plan, bool incremental) {
    if (view.exact_host && AnswerChanges(view, plan, incremental)) return;
    for (const Assignment& a : full_) planned_model_[a.job] = a.model;
    if (view.exact_host) {
      // The cached model is current for every running job here (touched ones were placed again).
      for (int i : *view.running) {
        const int m = planned_model_[i];
        if (m != c_[i].model) {
          plan->push_back({i, m < 0 ? kStop : m});
          Touch(i);
        }
        if (m >= 0) planned_model_[i] = kWasRunning;
      }
      for (const Assignment& a : full_) {
        if (planned_model_[a.job] == kWasRunning) continue;
        plan->push_back(a);
        Touch(a.job);
      }
      KeepUnlistedRunning();
    } else {
      plan->insert(plan->end(), full_.begin(), full_.end());
      for (const Assignment& a : full_) {
        const Job& j = view.job(a.job);
        if (j.state != JobState::kRunning || j.model != a.model) Touch(a.job);
      }
      for (int i : *view.running)
        if (planned_model_[i] < 0) Touch(i);
    }
    for (const Assignment& a : full_) planned_model_[a.job] = -1;
  }

  // The plan of changes in O(changes): only running jobs that left Q1's running set (demoted_,
  // the running Q2 jobs read) or that a swap or an upgrade moved can differ from their model;
  // every other running job keeps its GPUs. Their stops and migrations are put in the host's
  // running order by Job::running_pos; false (nothing written) when the host does not keep it
  // and the full plan is at hand.
  bool AnswerChanges(const JobTimeView& view, std::vector<Assignment>* plan, bool incremental) {
    for (size_t p = prefix_; p < full_.size(); ++p) planned_model_[full_[p].job] = full_[p].model;
    for (const Assignment& a : upgraded_) planned_model_[a.job] = a.model;
    changes_.clear();
    candidates_.clear();
    auto consider = [&](int i) {
      const int m = planned_model_[i];
      if (m == kWasRunning || m == kSeenStopped) return;  // seen already
      candidates_.push_back(i);
      if (m != c_[i].model) changes_.push_back({view.job(i).running_pos, i, m});
      planned_model_[i] = m >= 0 ? kWasRunning : kSeenStopped;
    };
    for (int i : demoted_) consider(i);
    for (int i : q2_read_) consider(i);
    for (int i : swapped_) consider(i);
    for (const Assignment& a : upgraded_) consider(a.job);
    bool ok = true;
    for (const Change& c : changes_)
      ok = ok && c.pos >= 0 && c.pos < static_cast<int>(view.running->size()) &&
           (*view.running)[c.pos] == c.job;
    if (!ok && incremental) positions_kept_ = false;  // read in full from the next point on
    if (ok || incremental) {
      if (ok)
        std::sort(changes_.begin(), changes_.end(),
                  [](const Change& a, const Change& b) { return a.pos < b.pos; });
      for (const Change& c : changes_) {
        plan->push_back({c.job, c.model < 0 ? kStop : c.model});
        Touch(c.job);
      }
      for (size_t p = prefix_; p < full_.size(); ++p) {
        const Assignment& a = full_[p];
        if (planned_model_[a.job] == kWasRunning) continue;
        plan->push_back(a);
        Touch(a.job);
      }
      KeepUnlistedRunning();
    }
    for (size_t p = prefix_; p < full_.size(); ++p) planned_model_[full_[p].job] = -1;
    for (int i : candidates_) planned_model_[i] = -1;
    return ok || incremental;
  }

  // ---- Step 1: demotion ----

  // Demotes running Q1 jobs whose service exceeds mean x priority_threshold_ratio. The mean comes
  // from sums kept as jobs start and stop; when it or a service lies within that sum's rounding of
  // a decision, the straightforward sum over the host's running order decides instead.
  void Demote(const JobTimeView& view) {
    demoted_.clear();
    const size_t n = view.running->size();
    if (n == 0) return;
    const double now = view.now;
    if (run_count_ == n) {
      const double mean = (sum_c_ + now * sum_rate_) / static_cast<double>(n);
      const double err = 1e-9 * (sum_abs_c_ + now * sum_rate_) / static_cast<double>(n);
      if (mean < -err) return;  // the exact mean is not positive: nothing is demoted
      if (mean > err) {
        const double thr = mean * priority_ratio_;
        const double tol = priority_ratio_ * err + 1e-12 * std::abs(thr);
        bool certain = true;
        demote_.clear();
        for (RunClass& cl : classes_.all()) {
          for (auto it = cl.run[0].rbegin(); it != cl.run[0].rend() && certain; ++it) {
            const double s = RunningService(it->job, now);
            if (s < thr - tol) break;  // the rest of the class is below it
            if (s <= thr + tol) certain = false;
            demote_.push_back({s, it->job});
          }
          if (!certain) break;
        }
        if (certain) {
          for (const auto& [s, i] : demote_) DemoteOne(i, s);
          return;
        }
      }
    }
    // The straightforward rule, summed in the host's running order.
    double mean = 0, most_q1 = -kNever;
    service_.clear();
    for (int i : *view.running) {
      const double s = RunningService(i, now);
      service_.push_back(s);
      mean += s;
      if (c_[i].where == kRunQ1 && s > most_q1) most_q1 = s;
    }
    mean /= static_cast<double>(n);
    if (!(most_q1 > mean * priority_ratio_ && mean > 0)) return;
    for (size_t k = 0; k < n; ++k) {
      const int i = (*view.running)[k];
      if (c_[i].where == kRunQ1 && service_[k] > mean * priority_ratio_) DemoteOne(i, service_[k]);
    }
  }

  void DemoteOne(int i, double service) {
    c_[i].low = true;
    demoted_.push_back(i);
    Remove(i);
    // Waits in Q2 for this point (still running: it keeps its GPUs if nobody needs them).
    c_[i].where = kWaitQ2;
    wait_key_[i] = Key{service, c_[i].submit, i};
    q2_.Insert(c_[i].gpus, wait_key_[i]);
    Touch(i);
  }

  // ---- Step 2: promotion ----

  void Promote(const JobTimeView& view) {
    struct Entry {
      double at;
      int job;
      uint32_t stamp;
    };
    std::vector<Entry> again;
    const double horizon = view.now + 1e-9 * std::max(1.0, std::abs(view.now));
    while (!starving_.empty() && starving_.top().at <= horizon) {
      const auto e = starving_.top();
      starving_.pop();
      const int i = e.job;
      if (c_[i].where != kWaitQ2 || stamp_[i] != e.stamp) continue;  // stale
      const Job& j = view.job(i);
      const double ran = view.RunTime(i) - time_offset_[i];
      if (ran <= 0 || (view.now - j.wait_since) / ran > starve_ratio_) {
        Remove(i);
        c_[i].low = false;
        c_[i].service_offset = aware_ ? view.Service(i) : view.GpuTime(i);
        time_offset_[i] = view.RunTime(i);
        Place(view, i);
      } else {
        again.push_back({e.at, e.job, e.stamp});
      }
    }
    for (const Entry& e : again) starving_.push({e.at, e.job, e.stamp});
  }

  // ---- Per-job state ----

  void Resize(const JobTimeView& view) {
    const size_t n = view.jobs->size();
    if (n <= c_.size()) return;
    c_.resize(n);
    time_offset_.resize(n, 0);
    touched_flag_.resize(n, 0);
    swapped_flag_.resize(n, 0);
    read_flag_.resize(n, 0);
    listed_.resize(n, kNowhere);
    planned_model_.resize(n, -1);
    active_pos_.resize(n, -1);
    wait_key_.resize(n);
    stamp_.resize(n, 0);
    if (num_models_ != view.pool->num_models()) SetModels(view);
    speed_.resize(n * num_models_, 0);
  }

  void CacheSpec(const JobTimeView& view, int i) {
    const Job& j = view.job(i);
    c_[i].gpus = j.spec.num_gpu;
    c_[i].submit = j.spec.submit_time;
    c_[i].mem = j.spec.memory_gib;
    for (int m = 0; m < num_models_; ++m) speed_[i * num_models_ + m] = j.Speed(m);
    min_gpus_ = std::min(min_gpus_, c_[i].gpus);
    CountFaster(i, +1);
  }

  // Adds `delta` to the pairs of models (from, to) on which active job i runs strictly faster on
  // `to`: an upgrade pass skips plan entries on a model no active job would leave.
  void CountFaster(int i, int delta) {
    if (faster_count_.size() != static_cast<size_t>(num_models_ * num_models_))
      faster_count_.assign(num_models_ * num_models_, 0);
    for (int from = 0; from < num_models_; ++from)
      for (int to = 0; to < num_models_; ++to)
        if (Speed(i, to) > Speed(i, from)) faster_count_[from * num_models_ + to] += delta;
  }

  void Touch(int i) {
    if (touched_flag_[i]) return;
    touched_flag_[i] = 1;
    touched_.push_back(i);
  }

  // Takes a job out of the structures.
  void Remove(int i) {
    Counters& c = c_[i];
    if (c.where == kWaitQ1) q1_.Erase(c.gpus, wait_key_[i]);
    if (c.where == kWaitQ2) q2_.Erase(c.gpus, wait_key_[i]);
    if (c.where == kRunQ1 || c.where == kRunQ2) IndexRunning(i, -1);
    c.where = kNowhere;
    ++stamp_[i];
  }

  // Adds (+1) or removes (-1) running job i in its class, its indexes and the running sums.
  void IndexRunning(int i, int delta) {
    Counters& c = c_[i];
    RunClass& cl = classes_[c.cls];
    const int q = c.where == kRunQ2 ? 1 : 0;
    const RunKey key{c.key, c.submit, i};
    auto apply = [&](auto& set, const auto& k) {
      if (delta > 0)
        set.insert(k);
      else
        set.erase(k);
    };
    apply(cl.run[q], key);
    for (int m = 0; m < num_models_; ++m) {
      if (m == c.model) continue;
      if (upgrade_ && Speed(i, m) > Speed(i, c.model)) apply(cl.faster_on[q][m], key);
      const double mem_m = pool_memory_[m];
      if (swap_ && q == 0 && Speed(i, m) > 0 && !(mem_m > 0 && c.mem > mem_m))
        apply(cl.swap_to[m], GainKey{-(Speed(i, m) - Speed(i, c.model)), key});
    }
    run_count_ += delta;
    sum_c_ += delta * c.key;
    sum_abs_c_ += delta * std::abs(c.key);
    sum_rate_ += delta * cl.rate;
    if (q == 1) q2_gpus_[c.model] += delta * c.gpus;
    if (++sum_updates_ >= (1 << 16)) Resum();
  }

  // Sums the running jobs' keys afresh (the kept sums drift by their rounding).
  void Resum() {
    sum_updates_ = 0;
    sum_c_ = sum_abs_c_ = sum_rate_ = 0;
    for (const RunClass& cl : classes_.all())
      for (int q = 0; q < 2; ++q)
        for (const RunKey& k : cl.run[q]) {
          sum_c_ += k.c;
          sum_abs_c_ += std::abs(k.c);
          sum_rate_ += cl.rate;
        }
  }

  // Files an active job by its state in the view.
  void Place(const JobTimeView& view, int i) {
    const Job& j = view.job(i);
    Counters& c = c_[i];
    if (j.state == JobState::kRunning) {
      c.base = aware_ ? j.service : j.gpu_time;
      c.last_update = j.last_update;
      c.model = j.model;
      c.perf = view.pool->model(j.model).perf_factor;
      c.where = c.low ? kRunQ2 : kRunQ1;
      const double rate = aware_ ? c.gpus * c.perf : c.gpus;
      c.cls = classes_.Find(c.model, c.gpus, rate);
      // The service now, extrapolated back to time 0 at the class's rate.
      c.key = (c.base - c.service_offset) - c.last_update * rate;
      if (j.running_pos < 0 || j.running_pos >= static_cast<int>(view.running->size()) ||
          (*view.running)[j.running_pos] != i)
        positions_kept_ = false;
      IndexRunning(i, +1);
      if (lists_kept_ && listed_[i] != c.where) {
        listed_[i] = c.where;
        (c.where == kRunQ1 ? run_q1_ : run_q2_).push_back(i);
      }
    } else if (j.state == JobState::kPending) {
      // A waiting job's service does not move: its key is fixed until it runs again.
      wait_key_[i] = Key{(aware_ ? view.Service(i) : view.GpuTime(i)) - c.service_offset,
                         c.submit, i};
      if (c.low) {
        c.where = kWaitQ2;
        q2_.Insert(c.gpus, wait_key_[i]);
        // It starves once (now - wait_since) / ran > starve_ratio: from about this time on.
        const double ran = view.RunTime(i) - time_offset_[i];
        const double at = ran <= 0 ? -kNever : j.wait_since + starve_ratio_ * ran;
        starving_.push({at, i, stamp_[i]});
      } else {
        c.where = kWaitQ1;
        q1_.Insert(c.gpus, wait_key_[i]);
      }
    }
  }

  // Starts the running classes afresh for the pool's models.
  void SetModels(const JobTimeView& view) {
    num_models_ = view.pool->num_models();
    classes_.Reset(num_models_);
    q2_gpus_.assign(num_models_, 0);
    pool_memory_.resize(num_models_);
    for (int m = 0; m < num_models_; ++m) pool_memory_[m] = view.pool->model(m).memory_gib;
    run_count_ = 0;
    sum_c_ = sum_abs_c_ = sum_rate_ = 0;
    positions_kept_ = true;
  }

  // Re-reads every active job (a host that does not report every change).
  void Rebuild(const JobTimeView& view) {
    SetModels(view);
    speed_.assign(c_.size() * num_models_, 0);
    faster_count_.assign(num_models_ * num_models_, 0);
    q1_.Clear();
    q2_.Clear();
    starving_ = {};
    lists_kept_ = false;
    for (int i : touched_) touched_flag_[i] = 0;
    touched_.clear();
    std::sort(active_.begin(), active_.end());
    for (size_t p = 0; p < active_.size(); ++p) active_pos_[active_[p]] = static_cast<int>(p);
    for (int i : active_) {
      c_[i].where = kNowhere;
      CacheSpec(view, i);
      Place(view, i);
    }
  }

  // Aware: GPU-seconds x the model's perf factor; agnostic: plain GPU-seconds. Computed as
  // JobTimeView::Service / GpuTime compute them, from the counters cached when the job started.
  double RunningService(int i, double now) const {
    const Counters& c = c_[i];
    const double e = now - c.last_update;
    if (aware_) return (e > 0 ? c.base + e * c.gpus * c.perf : c.base) - c.service_offset;
    return (c.base + e * c.gpus) - c.service_offset;
  }

  double Speed(int i, int m) const { return speed_[i * num_models_ + m]; }

  // What the queue order reads of a running job.
  struct RunningKeys {
    const HeteroLas* policy;
    double Service(int i, double now) const { return policy->RunningService(i, now); }
    double Submit(int i) const { return policy->c_[i].submit; }
  };
  using Order = RunningOrder<RunningKeys>;

  struct Starving {
    double at;
    int job;
    uint32_t stamp;
    bool operator>(const Starving& o) const { return at > o.at; }
  };

  double priority_ratio_, starve_ratio_;
  bool swap_, aware_, upgrade_;
  int num_models_ = 0;
  std::vector<int> active_, active_pos_;
  // What a scheduling point reads of a job, in one record per job (one cache line instead of
  // one per array).
  struct Counters {
    double base = 0, last_update = 0, perf = 1;  // the host's counters when it last started
    double service_offset = 0;  // service forgotten at the last promotion
    double key = 0;             // RunKey::c while running
    double submit = 0;
    double mem = 0;
    int gpus = 0;
    int model = -1;
    int cls = -1;      // its RunClass while running
    bool low = false;  // in Q2
    Where where = kNowhere;
  };
  std::vector<Counters> c_;
  std::vector<double> time_offset_;
  std::vector<uint8_t> touched_flag_, swapped_flag_, read_flag_;
  // Per job: its model in full_ while Answer runs (kWasRunning once the running pass saw it),
  // else -1.
  std::vector<int> planned_model_;
  static constexpr int kWasRunning = -2, kSeenStopped = -3;
  size_t prefix_ = 0;  // full_'s first entries: running Q1 jobs on their model, unchanged
  std::vector<int> swapped_;          // running jobs a swap moved (listed in full_ after prefix_)
  std::vector<Assignment> upgraded_;  // running jobs an upgrade moved while not listed
  struct Change {
    int pos, job, model;
  };
  std::vector<Change> changes_;
  std::vector<int> candidates_;
  std::vector<int> demoted_;  // running jobs this point moved to Q2
  std::vector<std::pair<double, int>> demote_, sort_scratch_;
  std::vector<double> service_;
  std::vector<int64_t> faster_count_;  // see CountFaster
  std::vector<uint8_t> movable_;       // see RefreshMovable
  int min_gpus_ = std::numeric_limits<int>::max();  // fewest GPUs of any job seen
  std::vector<int> touched_;  // state may have changed since the last point
  std::vector<double> speed_;
  std::vector<double> pool_memory_;
  std::vector<Key> wait_key_;
  std::vector<uint32_t> stamp_;
  WaitQueue q1_, q2_;
  // Running jobs by class, and what is kept of them.
  RunClasses classes_;
  RunningKeys keys_{this};
  Order order_{keys_};
  size_t run_count_ = 0;
  double sum_c_ = 0, sum_abs_c_ = 0, sum_rate_ = 0;  // over running jobs: keys, |keys|, rates
  int sum_updates_ = 0;
  std::vector<int> q2_gpus_;    // GPUs of running Q2 jobs per model
  bool positions_kept_ = true;  // the host keeps Job::running_pos
  std::vector<Order::Forward> forward_;  // scratch cursors
  std::vector<int> run_q1_, run_q2_;  // the full fill's running jobs (see SortRunning)
  std::vector<Where> listed_;         // which of them lists a job
  bool lists_kept_ = false;           // they hold every running job
  std::vector<int> q2_read_;          // running Q2 jobs step 4 listed or stopped (read_flag_)
  // Step 4's streams: per cursor its model; per model open or not, and the GPUs its unread
  // stream jobs hold.
  std::vector<int> stream_model_, stream_left_, added_gpus_;
  std::vector<uint8_t> stream_open_;
  std::vector<Assignment> full_;      // this point's assignment (see FillChanges for its order)
  std::priority_queue<Starving, std::vector<Starving>, std::greater<Starving>> starving_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "hetero-las",
     .description = "heterogeneity-aware LAS, two-level feedback queue, best-model placement with "
                    "swaps",
     .params = {{.name = "priority_threshold_ratio", .type = ParamType::kNumber,
                 .default_value = 2.0, .help = "demotion threshold", .range = {.above = 0}},
                {.name = "starve_threshold_ratio", .type = ParamType::kNumber,
                 .default_value = 4.0, .help = "promotion threshold", .range = {.above = 0}},
                {"swap", ParamType::kBool, true, "swap jobs between models"},
                {"aware", ParamType::kBool, true, "heterogeneity-aware model choice"},
                {"upgrade", ParamType::kBool, true, "move jobs to faster models when free"}},
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(double pr, p.Get<double>("priority_threshold_ratio"));
      ASSIGN_OR_RETURN(double sr, p.Get<double>("starve_threshold_ratio"));
      ASSIGN_OR_RETURN(bool swap, p.Get<bool>("swap"));
      ASSIGN_OR_RETURN(bool aware, p.Get<bool>("aware"));
      ASSIGN_OR_RETURN(bool upgrade, p.Get<bool>("upgrade"));
      return std::unique_ptr<JobTimePolicy>(new HeteroLas(pr, sr, swap, aware, upgrade));
    });

}  // namespace
}  // namespace gpufleet::jobtime
