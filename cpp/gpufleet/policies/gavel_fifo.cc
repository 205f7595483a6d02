// Gavel's FIFO (fifo.py): jobs in arrival order each get one model (X = 1 there) while a model has
// GPUs for them; a job that fits nowhere stops the queue (no job jumps ahead). aware: the model
// where the job runs fastest, the allocation rebuilt at every solve (FIFOPolicyWithPerf), so a
// job may move to a faster model freed by a completion. aware=false: a model drawn at random among
// those with room (Python's generator seeded with the run's seed, as Gavel's), and a job keeps its
// model until it ends (FIFOPolicy, mode "base"); GPUs a finished job frees go first to the head of
// the queue when it fits there. The rounds run only jobs with a positive priority: FIFO never
// back-fills, so freed GPUs wait for the next solve.
//
// Gavel's base mode has a bug (a loop variable used after its loop): the job goes to the last
// model of its list of models with free GPUs, not the drawn one, even past that model's capacity.
// The Gavel-compatible mode reproduces it unless GavelCompat::fifo_stale_type is off.
//
// packing=true is Gavel's fifo_packed (FIFOPolicyWithPacking): the aware allocation, then the jobs
// still queued are packed onto running jobs (Pack below).
#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "gpufleet/core/status_macros.h"
#include "gpufleet/policies/gavel_round_policy.h"
#include "gpufleet/policies/python_random.h"

namespace gpufleet::jobtime {
namespace {

// Gavel's FIFO packs a pair only when its summed normalised rate exceeds this (fifo.py).
constexpr double kPackingThreshold = 1.5;

class GavelFifo : public GavelRoundPolicy {
 public:
  using GavelRoundPolicy::GavelRoundPolicy;

  absl::Status Init(const JobTimeView& view) override {
    RETURN_IF_ERROR(GavelRoundPolicy::Init(view));
    rng_ = std::make_unique<PythonRandom>(view.seed);
    stale_ = view.gavel != nullptr && view.gavel->fifo_stale_type;
    return absl::OkStatus();
  }

 protected:
  absl::StatusOr<Allocation> Allocate(const AllocationInput& in) override {
    const int columns = static_cast<int>(in.capacity.size());
    std::vector<long> available(in.capacity.begin(), in.capacity.end());
    std::map<int, int> row_of;  // job -> input row
    for (size_t r = 0; r < in.jobs.size(); ++r) row_of[in.jobs[r].job] = static_cast<int>(r);
    auto rate = [&](int job, int c) { return in.jobs[row_of.at(job)].rate[c]; };
    auto gpus = [&](int job) { return in.jobs[row_of.at(job)].gpus; };
    if (options().aware) allocation_.clear();
    std::vector<int> queue;  // by job id
    for (const AllocationJob& j : in.jobs)
      if (!allocation_.count(j.job)) queue.push_back(j.job);
    // Base mode: jobs that ended hand their model to the head of the queue when it fits there.
    const std::map<int, int> before = allocation_;
    for (const auto& [job, column] : before) {
      if (!row_of.count(job)) {
        if (!queue.empty()) {
          const int head = queue.front();
          if (gpus(head) <= available[column] && rate(head, column) > 0) {
            queue.erase(queue.begin());
            allocation_[head] = column;
            available[column] -= gpus(head);
          }
        }
        allocation_.erase(job);
      } else {
        available[column] -= gpus(job);
      }
    }
    std::vector<int> types;  // columns with free GPUs, in name order
    for (int c = 0; c < columns; ++c)
      if (available[c] > 0) types.push_back(c);
    while (!queue.empty() && !types.empty()) {
      const int job = queue.front();
      queue.erase(queue.begin());
      std::vector<int> fits, position;
      for (size_t k = 0; k < types.size(); ++k)
        if (available[types[k]] >= gpus(job)) {
          fits.push_back(types[k]);
          position.push_back(static_cast<int>(k));
        }
      if (fits.empty()) break;
      int pick, column;
      if (!options().aware) {
        pick = static_cast<int>(rng_->RandBelow(static_cast<int64_t>(fits.size())));
        column = stale_ ? types.back() : fits[pick];
      } else {
        pick = 0;
        double best = -1;
        for (size_t k = 0; k < fits.size(); ++k)
          if (rate(job, fits[k]) > best) {
            best = rate(job, fits[k]);
            pick = static_cast<int>(k);
          }
        column = fits[pick];
      }
      if (rate(job, column) > 0) {
        allocation_[job] = column;
        available[column] -= gpus(job);
        if (available[column] == 0) types.erase(types.begin() + position[pick]);
      }
    }
    std::vector<std::pair<int, int>> packed;  // (input pair, column)
    if (options().packing) packed = Pack(in, queue);
    Allocation x(in.jobs.size() + in.pairs.size(), std::vector<double>(columns, 0.0));
    for (const auto& [job, column] : allocation_)
      if (row_of.count(job)) x[row_of.at(job)][column] = 1.0;
    for (const auto& [pair, column] : packed) x[in.jobs.size() + pair][column] = 1.0;
    return x;
  }

  // Gavel's FIFO packing (fifo.py, _pack): each job left in the queue, in order, joins the running
  // job of its GPU count whose pair with it has the largest summed normalised rate (each job's
  // co-located rate over its rate alone on that model), if that exceeds the threshold (1.5, then
  // the best so far); the pair takes the running job's model. The first job with no such partner
  // ends the packing (no job jumps ahead in the queue).
  std::vector<std::pair<int, int>> Pack(const AllocationInput& in, const std::vector<int>& queue) {
    std::map<std::pair<int, int>, int> pair_of;  // (job, job) -> input pair
    for (size_t k = 0; k < in.pairs.size(); ++k) {
      const int a = in.jobs[in.pairs[k].a].job, b = in.jobs[in.pairs[k].b].job;
      pair_of[{a, b}] = pair_of[{b, a}] = static_cast<int>(k);
    }
    std::vector<std::pair<int, int>> packed;
    for (int job : queue) {
      double best = kPackingThreshold;
      int with = -1, best_pair = -1;
      for (const auto& [running, column] : allocation_) {  // single jobs, by id
        auto it = pair_of.find({running, job});
        if (it == pair_of.end()) continue;  // another GPU count, or no co-located rates
        const AllocationPair& pair = in.pairs[it->second];
        double normalised = 0;
        for (auto [row, rate] : {std::pair{pair.a, pair.rate_a[column]},
                                 std::pair{pair.b, pair.rate_b[column]}}) {
          const double alone = in.jobs[row].rate[column];
          if (rate > 0 && alone > 0) normalised += rate / alone;
        }
        if (normalised > best) {
          best = normalised;
          with = running;
          best_pair = it->second;
        }
      }
      if (with < 0) break;
      packed.emplace_back(best_pair, allocation_.at(with));
      allocation_.erase(with);
    }
    return packed;
  }
  AgnosticRate agnostic_rate() const override { return AgnosticRate::kTrue; }
  bool Fifo() const override { return true; }

 private:
  bool stale_ = false;
  std::unique_ptr<PythonRandom> rng_;
  std::map<int, int> allocation_;  // job -> column; kept between solves when agnostic
};

GPUFLEET_REGISTER(JobTimePolicy,
    {.name = "gavel-fifo",
     .description = "Gavel's FIFO: arrival order, one model per job (fastest when aware, drawn "
                    "when agnostic), realised by rounds without back-fill (OSDI'20)",
     // An agnostic FIFO job keeps its model anyway: no sticky variant.
     .params = GavelRoundParams(/*sticky=*/false, /*packing=*/true),
     // Rebuilt at every solve when aware, a job may move to a faster model or make way for an
     // earlier job that now fits.
     .traits = {.preemptive = true}},
    [](const Params& p) -> absl::StatusOr<std::unique_ptr<JobTimePolicy>> {
      ASSIGN_OR_RETURN(GavelRoundPolicy::Options o, GavelRoundOptions(p));
      return std::unique_ptr<JobTimePolicy>(new GavelFifo(o));
    });

}  // namespace
}  // namespace gpufleet::jobtime
