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
// point reads only the jobs whose state changed since the last one. Waiting jobs sit in ordered
// sets per GPU count with their (fixed) priority, so the scans of steps 3 and 4 visit only jobs that
// can still fit; starving Q2 jobs come from a heap of the times their ratio crosses the threshold;
// running jobs carry their counters in compact arrays, and their order (service grows while they
// run) is restored by an insertion sort of the last point's order. On such a host the answer is a
// plan of changes, built in O(changes) from the jobs a point can move (see AnswerChanges). Every
// decision is taken by the same comparison on the same numbers as the straightforward algorithm
// (a test compares the two).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <tuple>
#include <vector>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/job_time_policy.h"
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
    const double now = view.now;
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
    // 1. Demote running jobs far above the running mean (summed in the host's running order).
    // The largest Q1 service comes with the sum: when it is not above the threshold, no job is,
    // and the demotion pass is skipped.
    double mean = 0;
    double most_q1 = -kNever;
    for (int i : *view.running) {
      Counters& c = c_[i];
      c.service_now = RunningService(i, now);
      mean += c.service_now;
      if (!c.low && c.service_now > most_q1) most_q1 = c.service_now;
    }
    if (!view.running->empty()) mean /= view.running->size();
    demoted_.clear();
    const bool any_demoted = most_q1 > mean * priority_ratio_ && mean > 0;
    for (int i : *view.running) {
      if (!any_demoted) break;
      if (!c_[i].low && c_[i].service_now > mean * priority_ratio_ && mean > 0) {
        c_[i].low = true;
        demoted_.push_back(i);
        Remove(i);
        // Waits in Q2 for this point (still running: it keeps its GPUs if nobody needs them).
        c_[i].where = kWaitQ2;
        wait_key_[i] = Key{c_[i].service_now, c_[i].submit, i};
        q2_.Insert(c_[i].gpus, wait_key_[i]);
        Touch(i);
      }
    }
    // 2. Promote starving Q2 jobs with their history forgotten.
    Promote(view);
    // Running jobs in queue order: Q1 by (service, submit), then Q2.
    SortRunning(&run_q1_, kRunQ1);
    SortRunning(&run_q2_, kRunQ2);

    // 3. Running Q1 jobs keep their GPUs; then Q1's waiting jobs, each followed by a swap search.
    // The full assignment is built in full_; the host gets only its changes (see Answer).
    full_.clear();
    std::vector<Assignment>* const full = &full_;
    // On an exact host the filler starts from the host's busy counts and gives back the GPUs of
    // the running jobs outside Q1's running set (the same free counts as taking each running Q1
    // job, without reading their records).
    Filler fill(view, full, view.exact_host);
    if (view.exact_host) {
      for (int i : demoted_) fill.Release(i, c_[i].model);
      for (int i : run_q2_) fill.Release(i, c_[i].model);
      for (int i : run_q1_) full_.push_back({i, c_[i].model});
    } else {
      for (int i : run_q1_) fill.Take(i, c_[i].model);
    }
    prefix_ = full_.size();
    swapped_.clear();
    upgraded_.clear();
    const ModelChoice choice = aware_ ? ModelChoice::kFastest : ModelChoice::kFirstFit;
    auto most_free = [&] {
      int most = 0;
      for (int m = 0; m < num_models_; ++m) most = std::max(most, fill.free(m));
      return most;
    };
    q1_.Walk(most_free, [&](const Key& k) {
      if (fill.TryPlace(k.job, choice) >= 0 && swap_) TrySwap(view, fill, full, full->size() - 1);
      return fill.total_free() > 0;
    });
    // 4. Q2: its running jobs first (each keeps its model while it fits), then its waiting ones.
    if (fill.total_free() > 0) {
      for (int i : run_q2_) {
        if (fill.total_free() == 0) break;
        fill.TryPlace(i, choice);
      }
    }
    if (fill.total_free() > 0)
      q2_.Walk(most_free, [&](const Key& k) {
        fill.TryPlace(k.job, choice);
        return fill.total_free() > 0;
      });
    if (!aware_) KeepModels(view, ModelChoice::kFirstFit, full);
    if (upgrade_) Upgrade(view, fill, full);

    Answer(view, plan);
  }

 private:
  // Hands full_ to the host: on an exact host as a plan of changes (KeepUnlistedRunning), whose
  // stops and migrations are listed in the host's running order and whose starts keep their order
  // in full_, so the host applies them in the same sequence as the full plan (its running order,
  // finish times and device choices stay the same); elsewhere the full plan. Jobs whose state
  // changes are read again on the next point.
  void Answer(const JobTimeView& view, std::vector<Assignment>* plan) {
    if (view.exact_host && AnswerChanges(view, plan)) return;
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
  // run_q2_) or that a swap or an upgrade moved can differ from their model; every other running
  // job is an untouched entry of full_'s first prefix_ entries. Their stops and migrations are
  // put in the host's running order by Job::running_pos; false (nothing written) when the host
  // does not keep it.
  bool AnswerChanges(const JobTimeView& view, std::vector<Assignment>* plan) {
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
    for (int i : run_q2_) consider(i);
    for (int i : swapped_) consider(i);
    for (const Assignment& a : upgraded_) consider(a.job);
    bool ok = true;
    for (const Change& c : changes_)
      ok = ok && c.pos >= 0 && c.pos < static_cast<int>(view.running->size()) &&
           (*view.running)[c.pos] == c.job;
    if (ok) {
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
    return ok;
  }

  void Resize(const JobTimeView& view) {
    const size_t n = view.jobs->size();
    if (n <= c_.size()) return;
    c_.resize(n);
    time_offset_.resize(n, 0);
    listed_.resize(n, kNowhere);
    touched_flag_.resize(n, 0);
    planned_model_.resize(n, -1);
    active_pos_.resize(n, -1);
    wait_key_.resize(n);
    stamp_.resize(n, 0);
    num_models_ = view.pool->num_models();
    speed_.resize(n * num_models_, 0);
  }

  void CacheSpec(const JobTimeView& view, int i) {
    const Job& j = view.job(i);
    c_[i].gpus = j.spec.num_gpu;
    c_[i].submit = j.spec.submit_time;
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

  // Takes a job out of the structures (running jobs leave their order list lazily).
  void Remove(int i) {
    if (c_[i].where == kWaitQ1) q1_.Erase(c_[i].gpus, wait_key_[i]);
    if (c_[i].where == kWaitQ2) q2_.Erase(c_[i].gpus, wait_key_[i]);
    c_[i].where = kNowhere;
    ++stamp_[i];
  }

  // Files an active job by its state in the view.
  void Place(const JobTimeView& view, int i) {
    const Job& j = view.job(i);
    if (j.state == JobState::kRunning) {
      c_[i].base = aware_ ? j.service : j.gpu_time;
      c_[i].last_update = j.last_update;
      c_[i].model = j.model;
      c_[i].perf = view.pool->model(j.model).perf_factor;
      const Where w = c_[i].low ? kRunQ2 : kRunQ1;
      c_[i].where = w;
      if (listed_[i] != w) {
        listed_[i] = w;
        (w == kRunQ1 ? run_q1_ : run_q2_).push_back(i);
      }
    } else if (j.state == JobState::kPending) {
      // A waiting job's service does not move: its key is fixed until it runs again.
      wait_key_[i] = Key{(aware_ ? view.Service(i) : view.GpuTime(i)) - c_[i].service_offset,
                         c_[i].submit, i};
      if (c_[i].low) {
        c_[i].where = kWaitQ2;
        q2_.Insert(c_[i].gpus, wait_key_[i]);
        // It starves once (now - wait_since) / ran > starve_ratio: from about this time on.
        const double ran = view.RunTime(i) - time_offset_[i];
        const double at = ran <= 0 ? -kNever : j.wait_since + starve_ratio_ * ran;
        starving_.push({at, i, stamp_[i]});
      } else {
        c_[i].where = kWaitQ1;
        q1_.Insert(c_[i].gpus, wait_key_[i]);
      }
    }
  }

  // Re-reads every active job (a host that does not report every change).
  void Rebuild(const JobTimeView& view) {
    num_models_ = view.pool->num_models();
    speed_.assign(c_.size() * num_models_, 0);
    faster_count_.assign(num_models_ * num_models_, 0);
    q1_.Clear();
    q2_.Clear();
    starving_ = {};
    run_q1_.clear();
    run_q2_.clear();
    for (int i : touched_) touched_flag_[i] = 0;
    touched_.clear();
    std::sort(active_.begin(), active_.end());
    for (size_t p = 0; p < active_.size(); ++p) active_pos_[active_[p]] = static_cast<int>(p);
    for (int i : active_) {
      c_[i].where = kNowhere;
      listed_[i] = kNowhere;
      CacheSpec(view, i);
      Place(view, i);
    }
  }

  // Aware: GPU-seconds x the model's perf factor; agnostic: plain GPU-seconds. Computed as
  // JobTimeView::Service / GpuTime compute them, from the counters cached when the job started.
  double RunningService(int i, double now) const {
    const double e = now - c_[i].last_update;
    if (aware_) return (e > 0 ? c_[i].base + e * c_[i].gpus * c_[i].perf : c_[i].base) - c_[i].service_offset;
    return (c_[i].base + e * c_[i].gpus) - c_[i].service_offset;
  }

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

  // Drops jobs that left `kind`, then restores the (service, submit, index) order: services moved
  // since the last point, so the old order is nearly sorted.
  void SortRunning(std::vector<int>* list, Where kind) {
    size_t kept = 0;
    for (int i : *list) {
      if (c_[i].where == kind)
        (*list)[kept++] = i;
      else if (listed_[i] == kind)
        listed_[i] = kNowhere;
    }
    list->resize(kept);
    auto less = [&](int a, int b) {
      return std::tie(c_[a].service_now, c_[a].submit, a) < std::tie(c_[b].service_now, c_[b].submit, b);
    };
    for (size_t k = 1; k < list->size(); ++k) {
      const int x = (*list)[k];
      size_t m = k;
      while (m > 0 && less(x, (*list)[m - 1])) {
        (*list)[m] = (*list)[m - 1];
        --m;
      }
      (*list)[m] = x;
    }
  }

  double Speed(int i, int m) const { return speed_[i * num_models_ + m]; }

  void Upgrade(const JobTimeView& view, Filler& fill, std::vector<Assignment>* plan) {
    if (fill.total_free() == 0) return;
    // movable_[from]: some model `to` has room for the smallest job and some active job runs
    // faster there than on `from`. Without it no entry on `from` passes the check below, so the
    // entry is skipped unread (most entries, on a busy cluster).
    auto refresh = [&] {
      movable_.assign(num_models_, 0);
      for (int from = 0; from < num_models_; ++from)
        for (int to = 0; to < num_models_; ++to)
          if (to != from && faster_count_[from * num_models_ + to] > 0 &&
              fill.free(to) >= min_gpus_)
            movable_[from] = 1;
    };
    refresh();
    const size_t n = plan->size();
    for (size_t p = 0; p < n; ++p) {
      const int i = (*plan)[p].job;
      const int from = (*plan)[p].model;
      if (!movable_[from]) continue;
      // Only a faster model with room can finish it sooner (times are left / speed).
      bool any = false;
      for (int m = 0; m < num_models_ && !any; ++m)
        any = m != from && c_[i].gpus <= fill.free(m) && Speed(i, m) > Speed(i, from);
      if (!any) continue;
      const Job& j = view.job(i);
      const double left = view.RemainingWork(i);
      double best_time = left / j.Speed(from);
      int best = -1;
      for (int m = 0; m < view.pool->num_models(); ++m) {
        if (m == from || !fill.Fits(i, m)) continue;
        double t = left / j.Speed(m) + (j.state == JobState::kRunning ? view.restore_delay : 0);
        if (t < best_time) {
          best_time = t;
          best = m;
        }
      }
      if (best < 0) continue;
      fill.Release(i, from);
      fill.Take(i, best);  // appends an entry: fold it back into position p
      plan->pop_back();
      (*plan)[p].model = best;
      if (p < prefix_) upgraded_.push_back({i, best});
      refresh();
    }
  }

  // plan[s_pos] is the new job s on model k; looks for the best running job i to trade models.
  void TrySwap(const JobTimeView& view, Filler& fill, std::vector<Assignment>* plan, size_t s_pos) {
    const int s = (*plan)[s_pos].job;
    const int k = (*plan)[s_pos].model;
    const int ns = c_[s].gpus;
    const GpuModel& mk = view.pool->model(k);
    const double mem_s = view.job(s).spec.memory_gib;
    double best_gain = 1e-12;
    size_t best = plan->size();
    for (size_t p = 0; p < s_pos; ++p) {
      const int i = (*plan)[p].job;
      const int j = (*plan)[p].model;
      const int ni = c_[i].gpus;
      // Running jobs in the plan are the running Q1 jobs (waiting ones are kWaitQ1 here).
      if (j == k || c_[i].where != kRunQ1 || ni > ns) continue;
      if (fill.free(j) + ni < ns || !(Speed(i, k) > 0) || !(Speed(s, j) > 0)) continue;
      const GpuModel& mj = view.pool->model(j);
      if ((mj.memory_gib > 0 && mem_s > mj.memory_gib) ||
          (mk.memory_gib > 0 && view.job(i).spec.memory_gib > mk.memory_gib))
        continue;
      double gain = ni * (Speed(i, k) - Speed(i, j)) + ns * (Speed(s, j) - Speed(s, k));
      if (gain > best_gain) {
        best_gain = gain;
        best = p;
      }
    }
    if (best == plan->size()) return;
    const int i = (*plan)[best].job;
    const int j = (*plan)[best].model;
    // Rebuild the two entries through the filler so its free counts stay right.
    plan->erase(plan->begin() + s_pos);
    plan->erase(plan->begin() + best);
    if (best < prefix_) --prefix_;
    swapped_.push_back(i);
    fill.Release(i, j);
    fill.Release(s, k);
    fill.Take(i, k);
    fill.Take(s, j);
  }

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
  // Per job: queue state, and what the structures were built from.
  // What a scheduling point reads of every running job, in one record per job (one cache line
  // instead of one per array).
  struct Counters {
    double base = 0, last_update = 0, perf = 1;  // the host's counters when it last started
    double service_offset = 0;  // service forgotten at the last promotion
    double service_now = 0;     // this point's service (running jobs)
    double submit = 0;
    int gpus = 0;
    int model = -1;
    bool low = false;  // in Q2
    Where where = kNowhere;
  };
  std::vector<Counters> c_;
  std::vector<double> time_offset_;
  std::vector<Where> listed_;  // which running list holds it (lazily)
  std::vector<uint8_t> touched_flag_;
  // Per job: its model in full_ while Answer runs (kWasRunning once the running pass saw it),
  // else -1.
  std::vector<int> planned_model_;
  static constexpr int kWasRunning = -2, kSeenStopped = -3;
  size_t prefix_ = 0;  // full_'s first entries: running Q1 jobs on their model, unchanged
  std::vector<int> swapped_;           // running jobs a swap moved (full_ lists them after prefix_)
  std::vector<Assignment> upgraded_;   // entries of the prefix an upgrade moved
  struct Change {
    int pos, job, model;
  };
  std::vector<Change> changes_;
  std::vector<int> candidates_;
  std::vector<int> demoted_;  // running jobs this point moved to Q2
  std::vector<int64_t> faster_count_;  // see CountFaster
  std::vector<uint8_t> movable_;       // see Upgrade
  int min_gpus_ = std::numeric_limits<int>::max();  // fewest GPUs of any job seen
  std::vector<int> touched_;  // state may have changed since the last point
  std::vector<double> speed_;
  std::vector<Key> wait_key_;
  std::vector<uint32_t> stamp_;
  WaitQueue q1_, q2_;
  std::vector<int> run_q1_, run_q2_;  // running jobs per queue, in queue order after SortRunning
  std::vector<Assignment> full_;      // this point's full assignment
  std::priority_queue<Starving, std::vector<Starving>, std::greater<Starving>> starving_;
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "hetero-las",
     .description = "heterogeneity-aware LAS, two-level feedback queue, best-model placement with "
                    "swaps",
     .params = {{"priority_threshold_ratio", ParamType::kNumber, 2.0, "demotion threshold (> 0)"},
                {"starve_threshold_ratio", ParamType::kNumber, 4.0, "promotion threshold (> 0)"},
                {"swap", ParamType::kBool, true, "swap jobs between models"},
                {"aware", ParamType::kBool, true, "heterogeneity-aware model choice"},
                {"upgrade", ParamType::kBool, true, "move jobs to faster models when free"}},
     .capabilities = {"preemptive"}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(double pr, p.Get<double>("priority_threshold_ratio"));
      ASSIGN_OR_RETURN(double sr, p.Get<double>("starve_threshold_ratio"));
      ASSIGN_OR_RETURN(bool swap, p.Get<bool>("swap"));
      ASSIGN_OR_RETURN(bool aware, p.Get<bool>("aware"));
      ASSIGN_OR_RETURN(bool upgrade, p.Get<bool>("upgrade"));
      if (!(pr > 0) || !(sr > 0))
        return absl::InvalidArgumentError(
            "hetero-las: priority_threshold_ratio and starve_threshold_ratio must be > 0");
      return std::unique_ptr<JobTimePolicy>(new HeteroLas(pr, sr, swap, aware, upgrade));
    });

}  // namespace
}  // namespace gpufleet::jobtime
