#include "gpufleet/policies/gavel_round_policy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "gpufleet/core/status_macros.h"

namespace gpufleet::jobtime {
namespace {

// Gavel recomputes its allocation at most this often (scheduler.py,
// minimum_time_between_allocation_resets).
constexpr double kGavelResetInterval = 1920;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Fits(const Job& j, const GpuModel& gm, int m) {
  return j.CanRunOn(m) && gm.count >= j.spec.num_gpu &&
         (gm.memory_gib <= 0 || j.spec.memory_gib <= gm.memory_gib);
}

}  // namespace

std::vector<ParamSpec> GavelRoundParams(bool sticky, bool packing) {
  std::vector<ParamSpec> params = {
      {.name = "round_duration", .type = ParamType::kNumber, .default_value = 360.0,
       .help = "seconds per round", .range = {.above = 0}},
      {"aware", ParamType::kBool, true, "heterogeneity-aware (false: agnostic)"}};
  if (sticky)
    params.push_back({"sticky", ParamType::kBool, false,
                      "agnostic only: one pooled LP column, a job staying on the model it landed on"});
  if (packing)
    params.push_back({"packing", ParamType::kBool, false,
                      "Gavel's *_packed variant: two jobs with the same GPU count may share GPUs at "
                      "their co-located rates (the Gavel-compatible mode only, with co-located "
                      "throughputs)"});
  return params;
}

absl::StatusOr<GavelRoundPolicy::Options> GavelRoundOptions(const Params& p) {
  GavelRoundPolicy::Options o;
  ASSIGN_OR_RETURN(o.round, p.Get<double>("round_duration"));
  ASSIGN_OR_RETURN(o.aware, p.Get<bool>("aware"));
  if (p.Has("sticky")) {
    ASSIGN_OR_RETURN(o.sticky, p.Get<bool>("sticky"));
  }
  if (p.Has("packing")) {
    ASSIGN_OR_RETURN(o.packing, p.Get<bool>("packing"));
  }
  if (o.packing && !o.aware)
    return absl::InvalidArgumentError(
        "packing=true is heterogeneity-aware only (as Gavel's packed policies): drop aware=false");
  return o;
}

absl::Status GavelRoundPolicy::Init(const JobTimeView& view) {
  seed_ = view.seed;
  const GpuPool& pool = *view.pool;
  if (options_.packing && view.gavel == nullptr)
    return absl::InvalidArgumentError(
        "packing=true runs only in the Gavel-compatible mode (gavel_compat, --gavel-compat): the "
        "default rounds cannot put two jobs on one GPU");
  if (view.gavel != nullptr) {
    shuffler_ = std::make_unique<PythonRandom>(view.seed + 5);  // seeds are < 2^63
    // Gavel walks ["v100", "p100", "k80"]: by name, descending.
    gavel_order_.resize(pool.num_models());
    for (int m = 0; m < pool.num_models(); ++m) gavel_order_[m] = m;
    std::stable_sort(gavel_order_.begin(), gavel_order_.end(), [&](int a, int b) {
      return Lower(pool.model(a).name) > Lower(pool.model(b).name);
    });
    worker_time_.assign(pool.num_models(), 0.0);
  }
  Grow(view.jobs->size(), pool.num_models());
  return absl::OkStatus();
}

void GavelRoundPolicy::Grow(size_t jobs, int models) {
  if (time_on_.size() >= jobs) return;
  time_on_.resize(jobs);
  share_.resize(jobs);
  in_allocation_.resize(jobs, 0);
  job_time_.resize(jobs);
  deficit_.resize(jobs);
  pairs_of_.resize(jobs);
}

double GavelRoundPolicy::PairRate(const JobTimeView& view, const Pair& p, int of, int m) const {
  const int other = of == p.lo ? p.hi : p.lo;
  return view.gavel->PairRate(of, other, m, view.pool->num_models());
}

void GavelRoundPolicy::AddPairs(int job, const JobTimeView& view) {
  const int models = view.pool->num_models();
  for (int k : active_) {
    if (k == job || view.job(k).spec.num_gpu != view.job(job).spec.num_gpu ||
        !view.gavel->Packable(job, k))
      continue;
    Pair p;
    p.lo = std::min(job, k);
    p.hi = std::max(job, k);
    p.share.assign(models, 0.0);
    p.job_time.assign(models, 0.0);
    p.deficit.assign(models, 0.0);
    const int index = static_cast<int>(pairs_.size());
    pairs_.push_back(std::move(p));
    pairs_of_[job].push_back(index);
    pairs_of_[k].push_back(index);
    entries_.push_back(-1 - index);
  }
}

void GavelRoundPolicy::OnArrival(int job, const JobTimeView& view) {
  const int models = view.pool->num_models();
  Grow(view.jobs->size(), models);
  active_.push_back(job);
  entries_.push_back(job);
  if (options_.packing) AddPairs(job, view);
  time_on_[job].assign(models, 0.0);
  share_[job].clear();
  in_allocation_[job] = 0;
  job_time_[job].assign(models, options_.round / 2);
  deficit_[job].assign(models, 0.0);
  dirty_ = need_update_ = true;
}

void GavelRoundPolicy::OnFinish(int job, const JobTimeView&) {
  active_.erase(std::find(active_.begin(), active_.end(), job));
  // Its pairs go with it (their X stays in the allocation until the next solve, unused).
  for (int p : pairs_of_[job]) pairs_[p].alive = false;
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](int e) { return e == job || (e < 0 && !pairs_[-1 - e].alive); }),
                 entries_.end());
  dirty_ = need_update_ = true;
}

void GavelRoundPolicy::OnPairMicroTask(int job, int partner, int model, double charged,
                                       bool succeeded, const JobTimeView&) {
  if (!succeeded) {
    need_update_ = true;
    return;
  }
  for (int p : pairs_of_[job]) {
    Pair& pair = pairs_[p];
    if (pair.lo != std::min(job, partner) || pair.hi != std::max(job, partner)) continue;
    pair.job_time[model] += charged;  // once, to the pair's own entry
    worker_time_[model] += charged;
    return;
  }
}

void GavelRoundPolicy::OnMicroTask(int job, int model, double charged, bool succeeded,
                                   const JobTimeView&) {
  if (!succeeded) {
    need_update_ = true;
    return;
  }
  job_time_[job][model] += charged;
  worker_time_[model] += charged;
}

double GavelRoundPolicy::NextWakeup(const JobTimeView&) const {
  return active_.empty() ? kNever : next_round_;
}

void GavelRoundPolicy::Schedule(const JobTimeView& view, std::vector<Assignment>* plan) {
  Grow(view.jobs->size(), view.pool->num_models());
  if (view.gavel != nullptr)
    ScheduleGavel(view, plan);
  else
    ScheduleRounds(view, plan);
}

bool GavelRoundPolicy::Solve(const JobTimeView& view, bool gavel) {
  const GpuPool& pool = *view.pool;
  const int models = pool.num_models();
  const std::vector<int>& by_name = pool.name_order();
  const bool pooled = !gavel && !options_.aware && options_.sticky && !Fifo();
  AllocationInput in;
  in.aware = options_.aware;
  in.gavel = gavel;
  in.centred = gavel || CentredByDefault() || (!options_.aware && !pooled);
  if (pooled) {
    in.capacity = {pool.total_gpus()};
  } else {
    for (int c = 0; c < models; ++c) in.capacity.push_back(pool.model(by_name[c]).count);
  }
  std::vector<int> ids = active_;
  std::sort(ids.begin(), ids.end());
  const int reference = gavel ? view.gavel->reference_model : -1;
  for (int i : ids) {
    const Job& j = view.job(i);
    AllocationJob a;
    a.job = i;
    a.gpus = j.spec.num_gpu;
    a.remaining = view.RemainingWork(i);
    a.age = view.now - j.spec.submit_time;
    bool runnable = false;
    a.rate.assign(in.capacity.size(), 0.0);
    for (int c = 0; c < models; ++c) {
      const int m = by_name[c];
      const bool fits = Fits(j, pool.model(m), m);
      runnable |= fits;
      double rate;
      if (options_.aware || agnostic_rate() == AgnosticRate::kTrue) {
        rate = gavel || fits ? j.Speed(m) : 0.0;  // Gavel gives X even where a job cannot fit
      } else if (gavel) {
        double ref = 0;
        if (reference >= 0) {
          ref = j.Speed(reference);
        } else {  // no reference model in the cluster: the job's fastest rate
          for (int k = 0; k < models; ++k) ref = std::max(ref, j.Speed(k));
        }
        rate = agnostic_rate() == AgnosticRate::kReference ? ref : 1.0;
      } else {
        rate = fits ? 1.0 : 0.0;  // reference work per second: speeds are relative to it
      }
      if (pooled)
        a.rate[0] = std::max(a.rate[0], rate);
      else
        a.rate[c] = rate;
    }
    if (!runnable && !gavel) continue;
    in.jobs.push_back(std::move(a));
  }
  std::vector<int> solved_pairs;
  if (options_.packing) {
    std::vector<int> row_of(view.jobs->size(), -1);
    for (size_t r = 0; r < in.jobs.size(); ++r) row_of[in.jobs[r].job] = static_cast<int>(r);
    for (size_t k = 0; k < pairs_.size(); ++k) {
      const Pair& p = pairs_[k];
      if (!p.alive || row_of[p.lo] < 0 || row_of[p.hi] < 0) continue;
      AllocationPair a;
      a.a = row_of[p.lo];
      a.b = row_of[p.hi];
      for (int c = 0; c < models; ++c) {
        a.rate_a.push_back(PairRate(view, p, p.lo, by_name[c]));
        a.rate_b.push_back(PairRate(view, p, p.hi, by_name[c]));
      }
      in.pairs.push_back(std::move(a));
      solved_pairs.push_back(static_cast<int>(k));
    }
  }
  if (in.jobs.empty()) return true;
  absl::StatusOr<Allocation> x = Allocate(in);
  if (!x.ok() || x->size() != in.jobs.size() + in.pairs.size()) return false;
  for (size_t r = 0; r < in.jobs.size(); ++r) {
    const int i = in.jobs[r].job;
    std::vector<double>& row = share_[i];
    row.assign(pooled ? 1 : models, 0.0);
    for (size_t c = 0; c < (*x)[r].size() && c < in.capacity.size(); ++c)
      row[pooled ? 0 : by_name[c]] = std::clamp((*x)[r][c], 0.0, 1.0);
    in_allocation_[i] = 1;
  }
  for (size_t k = 0; k < solved_pairs.size(); ++k) {
    Pair& p = pairs_[solved_pairs[k]];
    const std::vector<double>& row = (*x)[in.jobs.size() + k];
    for (int c = 0; c < models && c < static_cast<int>(row.size()); ++c)
      p.share[by_name[c]] = std::clamp(row[c], 0.0, 1.0);
    p.in_allocation = true;
  }
  return true;
}

// gpufleet's rounds (the default mode).
void GavelRoundPolicy::ScheduleRounds(const JobTimeView& view, std::vector<Assignment>* plan) {
  const GpuPool& pool = *view.pool;
  const int models = pool.num_models();
  // Time each running job has had on its model since the last point.
  for (int i : *view.running) time_on_[i][view.job(i).model] += view.now - last_point_;
  last_point_ = view.now;
  const bool boundary = view.now >= next_round_ - 1e-9;
  if (boundary) {
    next_round_ = std::floor(view.now / options_.round + 1e-9) * options_.round + options_.round;
    if (dirty_) dirty_ = !Solve(view, false);
  }
  const bool pooled = !options_.aware && options_.sticky && !Fifo();
  std::vector<int> rank(models);
  for (int c = 0; c < models; ++c) rank[pool.name_order()[c]] = c;
  Filler fill(view, plan);
  std::vector<char> placed(view.jobs->size(), 0);
  if (!boundary) {
    // Mid-round: the round's jobs keep their GPUs; freed GPUs go by priority below.
    for (int i : *view.running) {
      fill.Take(i, view.job(i).model);
      placed[i] = 1;
    }
  }
  struct Pair {
    double priority;
    double share;
    int job;
    int model;  // -1: the pooled column, realised on a drawn model
  };
  std::vector<Pair> pairs;
  for (int i : active_) {
    if (placed[i] || share_[i].empty()) continue;
    const Job& j = view.job(i);
    const double age = std::max(view.now - j.spec.submit_time, 1e-9);
    if (pooled) {
      const double x = share_[i][0];
      if (x <= 1e-9) continue;
      double held = 0;
      for (double s : time_on_[i]) held += s;
      const double had = held / age;
      pairs.push_back({had > 0 ? x / had : std::numeric_limits<double>::infinity(), x, i, -1});
      continue;
    }
    for (int m = 0; m < models && m < static_cast<int>(share_[i].size()); ++m) {
      const double x = share_[i][m];
      if (x <= 1e-9) continue;
      const double had = time_on_[i][m] / age;
      pairs.push_back({had > 0 ? x / had : std::numeric_limits<double>::infinity(), x, i, m});
    }
  }
  std::sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.share != b.share) return a.share > b.share;
    // Same job, same X and time share on two models: name order, not listing order.
    return a.job != b.job ? a.job < b.job : a.model >= 0 && rank[a.model] < rank[b.model];
  });
  for (const Pair& p : pairs) {
    if (placed[p.job]) continue;
    if (p.model < 0) {
      if (fill.TryPlace(p.job, ModelChoice::kAgnostic) >= 0) placed[p.job] = 1;
      continue;
    }
    if (!fill.Fits(p.job, p.model)) continue;
    fill.Take(p.job, p.model);
    placed[p.job] = 1;
  }
  if (Fifo()) return;  // FIFO does not back-fill
  const ModelChoice choice = options_.aware ? ModelChoice::kFastest : ModelChoice::kAgnostic;
  for (int i : active_) {
    if (fill.total_free() == 0) break;
    if (!placed[i] && fill.TryPlace(i, choice) >= 0) placed[i] = 1;
  }
}

void GavelRoundPolicy::ResetTimeRunSoFar(const JobTimeView& view) {
  const int models = view.pool->num_models();
  const double elapsed = view.now - last_reset_;
  std::fill(worker_time_.begin(), worker_time_.end(), 0.0);
  for (int j : active_) {
    for (int m = 0; m < models; ++m) {
      const double received = job_time_[j][m] - options_.round / 2;
      const double should =
          in_allocation_[j] && m < static_cast<int>(share_[j].size()) ? share_[j][m] * elapsed : 0;
      deficit_[j][m] += should - received;
      job_time_[j][m] = options_.round / 2;
      worker_time_[m] += options_.round / 2;
    }
  }
  for (Pair& p : pairs_) {
    if (!p.alive) continue;
    for (int m = 0; m < models; ++m) {
      p.deficit[m] += (p.in_allocation ? p.share[m] * elapsed : 0) -
                      (p.job_time[m] - options_.round / 2);
      p.job_time[m] = options_.round / 2;
      worker_time_[m] += options_.round / 2;
    }
  }
  last_reset_ = view.now;
}

// Gavel's mechanism (scheduler.py: _update_priorities, _schedule_jobs_on_workers_helper).
void GavelRoundPolicy::ScheduleGavel(const JobTimeView& view, std::vector<Assignment>* plan) {
  const GpuPool& pool = *view.pool;
  const int models = pool.num_models();
  if (view.gavel_idle_after_last_arrival) last_reset_ = 0;
  const bool reset_due = view.now - last_reset_ >= kGavelResetInterval || last_reset_ == 0;
  if (need_update_ && reset_due) {
    ResetTimeRunSoFar(view);
    Solve(view, true);  // on a solver error the previous allocation stays
    need_update_ = false;
  }
  // priority[m][e] = X / (the entry's time on m / all entries' time on m since the last reset),
  // over the entries (jobs, and pairs when packing) in insertion order.
  const size_t n = entries_.size();
  std::vector<std::vector<double>> priority(models, std::vector<double>(n, 0.0));
  // An entry's X, charged time and deficit on m, and whether it can run there at all.
  auto share = [&](int e, int m) {
    if (e >= 0) return in_allocation_[e] ? share_[e][m] : 0.0;
    const Pair& p = pairs_[-1 - e];
    return p.in_allocation ? p.share[m] : 0.0;
  };
  auto job_time = [&](int e, int m) { return e >= 0 ? job_time_[e][m] : pairs_[-1 - e].job_time[m]; };
  auto deficit = [&](int e, int m) { return e >= 0 ? deficit_[e][m] : pairs_[-1 - e].deficit[m]; };
  auto runs_on = [&](int e, int m) {
    if (e >= 0) return view.job(e).Speed(m) > 0;
    const Pair& p = pairs_[-1 - e];
    return PairRate(view, p, p.lo, m) > 0 && PairRate(view, p, p.hi, m) > 0;
  };
  for (int m = 0; m < models; ++m) {
    for (size_t k = 0; k < n; ++k) {
      const int e = entries_[k];
      const double x = share(e, m);
      if (x == 0 || !runs_on(e, m)) continue;
      const double fraction = worker_time_[m] == 0 ? 0 : job_time(e, m) / worker_time_[m];
      priority[m][k] = fraction > 0 ? x / fraction : x * 1e9;
    }
  }
  std::vector<int> order = gavel_order_;
  if (!options_.aware) shuffler_->Shuffle(order);
  std::vector<int> left(models);
  for (int m = 0; m < models; ++m) left[m] = pool.model(m).count;
  std::vector<char> chosen(view.jobs->size(), 0);
  std::vector<size_t> sorted(n);
  for (int m : order) {
    auto key = [&](size_t k) {
      return std::make_tuple(priority[m][k], deficit(entries_[k], m), share(entries_[k], m));
    };
    for (size_t k = 0; k < n; ++k) sorted[k] = k;
    // Python's sorted(..., reverse=True): descending, equal keys in insertion order.
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](size_t a, size_t b) { return key(a) > key(b); });
    for (size_t k : sorted) {
      if (left[m] == 0) break;
      const int e = entries_[k];
      const int j = e >= 0 ? e : pairs_[-1 - e].lo;
      const int partner = e >= 0 ? -1 : pairs_[-1 - e].hi;
      if (chosen[j] || (partner >= 0 && chosen[partner]) || !runs_on(e, m)) continue;
      if (Fifo() && priority[m][k] <= 0) continue;
      const int gpus = view.job(j).spec.num_gpu;  // a pair's jobs have the same count
      if (gpus > left[m]) continue;
      left[m] -= gpus;
      chosen[j] = 1;
      if (partner >= 0) chosen[partner] = 1;
      // An entry that arrived (or a pair made) since the last solve holds its GPUs this round but
      // does not run.
      if (e >= 0 ? in_allocation_[e] : pairs_[-1 - e].in_allocation)
        plan->push_back({j, m, partner});
    }
  }
}

}  // namespace gpufleet::jobtime
