#include "gpufleet/policies/job_time_policy.h"

#include <bit>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "gpufleet/core/status_macros.h"

namespace gpufleet::jobtime {

absl::StatusOr<std::unique_ptr<JobTimePolicy>> MakeJobTimePolicy(const std::string& spec) {
  ASSIGN_OR_RETURN(auto parsed, ParseSpec(spec));
  return Registry<JobTimePolicy>::Global().Create(parsed.first, parsed.second);
}

Json PolicyTraits::ToJson() const {
  return {{"needs_durations", needs_durations}, {"preemptive", preemptive}};
}

Filler::Filler(const JobTimeView& view, std::vector<Assignment>* plan, bool from_current)
    : view_(view), plan_(plan) {
  const GpuPool& pool = *view.pool;
  free_.resize(pool.num_models());
  for (int m = 0; m < pool.num_models(); ++m) {
    free_[m] = pool.model(m).count - (from_current ? (*view.busy)[m] : 0);
    total_free_ += free_[m];
  }
}

bool Filler::Fits(int job, int model) const {
  const Job& j = view_.job(job);
  const GpuModel& gm = view_.pool->model(model);
  return free_[model] >= j.spec.num_gpu && j.CanRunOn(model) &&
         (gm.memory_gib <= 0 || j.spec.memory_gib <= gm.memory_gib);
}

namespace {

// SplitMix64's finaliser: spreads any change of the input over all 64 bits.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform 64-bit number per (seed, job, time). Stateless, so the answer does not depend on how
// many draws came before: the simulator and the engine, which ask in different patterns, agree,
// and the same job asked twice at one scheduling point gets the same number.
uint64_t AgnosticDraw(uint64_t seed, int job, double now) {
  return Mix(Mix(Mix(seed) ^ static_cast<uint64_t>(job)) ^ std::bit_cast<uint64_t>(now));
}

}  // namespace

int Filler::PickModel(int job, ModelChoice choice) const {
  const Job& j = view_.job(job);
  if (choice != ModelChoice::kFastestMove && choice != ModelChoice::kAgnosticMove &&
      j.state == JobState::kRunning && Fits(job, j.model))
    return j.model;
  if (choice == ModelChoice::kAgnostic || choice == ModelChoice::kAgnosticMove)
    return DrawByFree(job, [](int) { return true; });
  double fastest = -1;
  for (int m = 0; m < static_cast<int>(free_.size()); ++m)
    if (Fits(job, m) && j.Speed(m) > fastest) fastest = j.Speed(m);
  if (fastest < 0) return -1;
  // Models that tie (a job without per-model speeds) are drawn like the agnostic choice, so an
  // aware policy does not prefer a model for being listed first either.
  return DrawByFree(job, [&](int m) { return j.Speed(m) == fastest; });
}

template <typename Pred>
int Filler::DrawByFree(int job, Pred eligible) const {
  const std::vector<int>& order = view_.pool->name_order();
  uint64_t room = 0;
  int last = -1, candidates = 0;
  for (int m : order) {
    if (!Fits(job, m) || !eligible(m)) continue;
    room += static_cast<uint64_t>(free_[m]);
    last = m;
    ++candidates;
  }
  if (candidates <= 1) return last;  // no choice, no draw: one-model runs stay exact
  uint64_t r = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(AgnosticDraw(view_.seed, job, view_.now)) * room) >> 64);
  for (int m : order) {
    if (!Fits(job, m) || !eligible(m)) continue;
    if (r < static_cast<uint64_t>(free_[m])) return m;
    r -= static_cast<uint64_t>(free_[m]);
  }
  return last;  // not reached: r < room
}

void Filler::Take(int job, int model) {
  AddFree(model, -view_.job(job).spec.num_gpu);
  plan_->push_back({job, model});
}

void Filler::Release(int job, int model) { AddFree(model, view_.job(job).spec.num_gpu); }

int Filler::TryPlace(int job, ModelChoice choice) {
  if (total_free_ < view_.job(job).spec.num_gpu) return -1;
  int m = PickModel(job, choice);
  if (m >= 0) Take(job, m);
  return m;
}

absl::Status CheckPlan(const std::vector<Assignment>& plan, const std::vector<Job>& jobs,
                       const GpuPool& pool, const std::vector<int>& busy, bool keep_unlisted,
                       const std::function<std::string(int)>& label, std::vector<int>* planned,
                       std::vector<int>* used) {
  if (keep_unlisted)
    *used = busy;
  else
    used->assign(pool.num_models(), 0);
  used->resize(pool.num_models(), 0);
  size_t listed = 0;
  auto fail = [&](absl::Status s) {
    for (size_t k = 0; k < listed; ++k) {
      (*planned)[plan[k].job] = -1;
      if (plan[k].partner >= 0) (*planned)[plan[k].partner] = -1;
    }
    return s;
  };
  for (const Assignment& a : plan) {
    if (a.model == kStop && keep_unlisted && a.job >= 0 && a.job < static_cast<int>(jobs.size()) &&
        jobs[a.job].state == JobState::kRunning) {
      (*used)[jobs[a.job].model] -= jobs[a.job].spec.num_gpu;
      ++listed;
      continue;
    }
    if (a.job < 0 || a.job >= static_cast<int>(jobs.size()) || a.model < 0 ||
        a.model >= pool.num_models())
      return fail(absl::InternalError(absl::StrFormat(
          "policy returned an out-of-range assignment (job %d, model %d)", a.job, a.model)));
    const Job& j = jobs[a.job];
    if (j.state != JobState::kPending && j.state != JobState::kRunning)
      return fail(absl::InternalError(
          absl::StrFormat("policy assigned job %s, which is not active", label(a.job))));
    if ((*planned)[a.job] >= 0 || !j.CanRunOn(a.model))
      return fail(absl::InternalError(
          absl::StrFormat("policy assigned job %s twice or to a model it cannot run on (%s)",
                          label(a.job), pool.model(a.model).name)));
    if (a.partner >= 0) {
      const int p = a.partner;
      if (keep_unlisted || p >= static_cast<int>(jobs.size()) || p == a.job)
        return fail(absl::InternalError(absl::StrFormat(
            "policy returned a bad pair (job %s with %d)", label(a.job), p)));
      const Job& q = jobs[p];
      if ((q.state != JobState::kPending && q.state != JobState::kRunning) || (*planned)[p] >= 0 ||
          !q.CanRunOn(a.model) || q.spec.num_gpu != j.spec.num_gpu)
        return fail(absl::InternalError(absl::StrFormat(
            "policy paired job %s with job %s, which is not active, listed twice, unable to run "
            "on %s or of another GPU count",
            label(a.job), label(p), pool.model(a.model).name)));
    }
    (*planned)[a.job] = a.model;
    if (a.partner >= 0) (*planned)[a.partner] = a.model;
    ++listed;
    if (keep_unlisted && j.state == JobState::kRunning) (*used)[j.model] -= j.spec.num_gpu;
    (*used)[a.model] += j.spec.num_gpu;  // once for a pair: its jobs share the GPUs
  }
  for (int m = 0; m < pool.num_models(); ++m)
    if ((*used)[m] > pool.model(m).count)
      return fail(absl::InternalError(
          absl::StrFormat("policy over-committed model %s (%d of %d GPUs)", pool.model(m).name,
                          (*used)[m], pool.model(m).count)));
  return absl::OkStatus();
}

void KeepModels(const JobTimeView& view, ModelChoice choice, std::vector<Assignment>* plan) {
  bool moved = false;
  for (const Assignment& a : *plan) {
    const Job& j = view.job(a.job);
    moved |= j.state == JobState::kRunning && j.model != a.model;
  }
  if (!moved) return;
  std::vector<Assignment> fresh;
  fresh.reserve(plan->size());
  Filler fill(view, &fresh);
  for (const Assignment& a : *plan) {
    const Job& j = view.job(a.job);
    if (j.state == JobState::kRunning) fill.Take(a.job, j.model);  // the old running set fits
  }
  for (const Assignment& a : *plan) {
    if (view.job(a.job).state == JobState::kRunning) continue;
    if (fill.TryPlace(a.job, choice) < 0) return;
  }
  plan->swap(fresh);
}

}  // namespace gpufleet::jobtime
