// Simulator throughput: the 60-job Tiresias trace replicated 160 times (9,600 jobs) on 1,280 GPUs
// with dlas-gpu (Tiresias' own simulator: 33.8 s); synthetic jobs up to 10,000,000 on 100,000
// GPUs with LAS; and heterogeneity-aware LAS on three GPU models. FIFO on the same inputs is the
// in-run baseline. Data: $GPUFLEET_SHARED_DATA or ../shared/data.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "gpufleet/sim/simulator.h"
// The straightforward hetero-las the policy replaced, as the in-run baseline.
#include "../../tests/cpp/reference/hetero_las_reference.h"
#include "../../tests/cpp/reference/las_reference.h"

namespace gpufleet::sim {

using jobtime::GpuPool;
using jobtime::JobSpec;
using jobtime::MakeJobTimePolicy;
namespace {

std::vector<JobSpec> Tiresias9600() {
  const char* env = std::getenv("GPUFLEET_SHARED_DATA");
  std::ifstream in(std::string(env ? env : "../shared/data") + "/tiresias/60_job.csv");
  std::vector<JobSpec> base;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string f[7];
    for (auto& x : f) std::getline(ss, x, ',');
    JobSpec s;
    s.num_gpu = std::stoi(f[1]);
    s.submit_time = std::stod(f[2]);
    s.duration = std::stod(f[5]);
    base.push_back(s);
  }
  std::vector<JobSpec> jobs;
  for (int copy = 0; copy < 160; ++copy)
    for (const JobSpec& b : base) {
      jobs.push_back(b);
      jobs.back().id = static_cast<int64_t>(jobs.size());
    }
  return jobs;
}

// Poisson arrivals, lognormal durations (median 30 min), 1/2/4/8 GPUs, at an offered load
// (GPU-seconds asked / GPU-seconds available). `spec(i)` is where job i's spec goes.
template <typename SpecOf>
void FillSynthetic(int n, int gpus, uint64_t seed, double load, SpecOf spec) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dur(std::log(1800.0), 1.2);
  std::discrete_distribution<int> g({0.6, 0.2, 0.12, 0.08});
  const int sizes[] = {1, 2, 4, 8};
  double mean_gpu_seconds = (0.6 * 1 + 0.2 * 2 + 0.12 * 4 + 0.08 * 8) * 1800.0 * std::exp(0.72);
  std::exponential_distribution<double> gap(load * gpus / mean_gpu_seconds);
  double t = 0;
  for (int i = 0; i < n; ++i) {
    JobSpec& s = spec(i);
    s.id = i;
    s.submit_time = t;
    s.num_gpu = sizes[g(rng)];
    s.duration = std::max(1.0, dur(rng));
    t += gap(rng);
  }
}

std::vector<JobSpec> Synthetic(int n, int gpus, uint64_t seed, double load) {
  std::vector<JobSpec> jobs(n);
  FillSynthetic(n, gpus, seed, load, [&](int i) -> JobSpec& { return jobs[i]; });
  return jobs;
}

// The same jobs as whole records, for the largest inputs: the simulator keeps them as they are
// instead of building its records beside a vector of specs.
std::vector<jobtime::Job> SyntheticRecords(int n, int gpus, uint64_t seed, double load) {
  std::vector<jobtime::Job> jobs(n);
  FillSynthetic(n, gpus, seed, load, [&](int i) -> JobSpec& { return jobs[i].spec; });
  return jobs;
}

// Three GPU models in equal thirds (K80, P100, V100, first-fit order) and eight kinds of job whose
// speed on each model is the model's mean speed-up (0.25, 0.6, 1.0 of a V100, as the synthetic
// traces of gpufleet.traces) times lognormal noise per kind. The offered load is relative to the
// speed-weighted capacity (sum over models of GPUs x mean speed).
std::vector<JobSpec> SyntheticHetero(int n, int gpus, uint64_t seed, double load) {
  const double mean_speed[] = {0.25, 0.6, 1.0};
  std::mt19937_64 kinds_rng(seed + 1000);
  std::lognormal_distribution<double> noise(0.0, 0.25);
  std::vector<std::vector<double>> kind_speed(8);
  for (auto& k : kind_speed)
    for (int m = 0; m < 3; ++m) k.push_back(m == 2 ? 1.0 : mean_speed[m] * noise(kinds_rng));
  const double capacity = gpus / 3.0 * (mean_speed[0] + mean_speed[1] + mean_speed[2]);
  std::vector<JobSpec> jobs = Synthetic(n, static_cast<int>(capacity), seed, load);
  std::uniform_int_distribution<int> kind(0, 7);
  for (JobSpec& j : jobs) j.speed = kind_speed[kind(kinds_rng)];
  return jobs;
}

jobtime::GpuPool HeteroPool(int gpus) {
  return GpuPool::FromJson(Json::array({{{"name", "k80"}, {"count", gpus / 3}},
                                        {{"name", "p100"}, {"count", gpus / 3}},
                                        {{"name", "v100"}, {"count", gpus - 2 * (gpus / 3)}}}))
      .value();
}

// `devices`: give every start real devices (the default DeviceLedger with binpack) or count GPUs
// only; the timing of the simulated jobs is the same, so the difference is the ledger's cost.
// `jobs` is copied into each run, or moved into the last one when the caller gives it up
// (`consume`; the largest inputs, where a second copy would double the memory).
template <typename Input>
void RunPolicy(benchmark::State& state, std::vector<Input>& jobs, const GpuPool& pool,
               const std::string& policy, double interval = 0, bool devices = true,
               bool consume = false) {
  SimOptions o;
  o.record_timeseries = false;
  if (consume) {
    // The largest runs report how far they got (on stderr), so a capped run still says something.
    o.progress_every = 1 << 20;
    o.progress = [n = jobs.size()](int64_t finished) {
      std::fprintf(stderr, "%lld of %zu jobs finished, %.1f s CPU\n",
                   static_cast<long long>(finished), n,
                   static_cast<double>(std::clock()) / CLOCKS_PER_SEC);
    };
  }
  o.scheduling_interval = interval;
  o.placement = devices ? "binpack" : "";
  double avg = 0;
  const size_t n = jobs.size();
  for (auto _ : state) {
    auto p = MakeJobTimePolicy(policy).value();
    const bool last = consume && state.iterations() + 1 >= state.max_iterations;
    auto r = Simulate(pool, last ? std::move(jobs) : std::vector<Input>(jobs), *p, o);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    else avg = r->summary.avg_jct;
  }
  state.counters["jobs"] = static_cast<double>(n);
  state.counters["avg_jct"] = avg;
  state.counters["interval_s"] = interval;
  state.counters["devices"] = devices;
}

// range(0): 1 = real devices (default), 0 = GPU counts only.
void BM_Tiresias9600(benchmark::State& state, const char* policy) {
  static auto jobs = Tiresias9600();
  if (jobs.size() != 9600) {
    state.SkipWithError("60_job.csv not found (set GPUFLEET_SHARED_DATA)");
    return;
  }
  RunPolicy(state, jobs, GpuPool::FromJson({{"gpu", 1280}}).value(), policy, 0,
            state.range(0) != 0);
}
BENCHMARK_CAPTURE(BM_Tiresias9600, fifo, "fifo")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tiresias9600, dlas_gpu, "dlas-gpu")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// range(2): scheduling interval in seconds (0 = on every arrival and completion);
// range(3): offered load in percent; range(4): 1 = real devices (default), 0 = GPU counts only.
void BM_Synthetic(benchmark::State& state, const char* policy) {
  const int n = static_cast<int>(state.range(0));
  const int gpus = static_cast<int>(state.range(1));
  const int load = static_cast<int>(state.range(3));
  const GpuPool pool = GpuPool::FromJson({{"gpu", gpus}}).value();
  if (n >= 5000000) {
    // The largest inputs: generated as whole records for their one run and moved in.
    std::vector<jobtime::Job> records = SyntheticRecords(n, gpus, 1, load / 100.0);
    RunPolicy(state, records, pool, policy, static_cast<double>(state.range(2)),
              state.range(4) != 0, /*consume=*/true);
    state.counters["load_pct"] = load;
    return;
  }
  // Inputs are kept for the next case.
  static std::vector<JobSpec> jobs;
  static int cached_n = -1, cached_load = -1;
  if (cached_n != n || cached_load != load) {
    jobs = Synthetic(n, gpus, 1, load / 100.0);
    cached_n = n;
    cached_load = load;
  }
  RunPolicy(state, jobs, pool, policy, static_cast<double>(state.range(2)), state.range(4) != 0);
  state.counters["load_pct"] = load;
}

// Same arguments as BM_Synthetic, on three GPU models (SyntheticHetero).
void BM_Hetero(benchmark::State& state, const char* policy) {
  const int n = static_cast<int>(state.range(0));
  const int gpus = static_cast<int>(state.range(1));
  const int load = static_cast<int>(state.range(3));
  static std::vector<JobSpec> jobs;
  static int cached_n = -1, cached_load = -1;
  if (cached_n != n || cached_load != load) {
    jobs = SyntheticHetero(n, gpus, 1, load / 100.0);
    cached_n = n;
    cached_load = load;
  }
  RunPolicy(state, jobs, HeteroPool(gpus), policy, static_cast<double>(state.range(2)),
            state.range(4) != 0);
  state.counters["load_pct"] = load;
}
#define GPUFLEET_SYNTH(name, policy)                                                          \
  BENCHMARK_CAPTURE(BM_Synthetic, name, policy)                                               \
      ->Args({10000, 100, 0, 90, 1})->Args({100000, 1000, 0, 90, 1})                       \
      ->Args({100000, 1000, 60, 90, 1})->Args({100000, 1000, 0, 98, 1})                     \
      ->Args({100000, 1000, 0, 98, 0})->Args({1000000, 10000, 0, 90, 1})                    \
      ->Args({1000000, 10000, 60, 90, 1})->Args({1000000, 10000, 0, 98, 1})                 \
      ->Args({1000000, 10000, 0, 98, 0})->Args({1000000, 10000, 60, 98, 1})                 \
      ->Unit(benchmark::kSecond)->Iterations(1)
GPUFLEET_SYNTH(fifo, "fifo");
GPUFLEET_SYNTH(las, "las");
GPUFLEET_SYNTH(dlas_gpu, "dlas-gpu");
// The largest single-model run: 10,000,000 jobs on 100,000 GPUs.
BENCHMARK_CAPTURE(BM_Synthetic, las, "las")
    ->Args({10000000, 100000, 0, 90, 1})->Unit(benchmark::kSecond)->Iterations(1);

#define GPUFLEET_HETERO(name, policy)                                                         \
  BENCHMARK_CAPTURE(BM_Hetero, name, policy)                                                  \
      ->Args({10000, 120, 0, 90, 1})->Args({100000, 1200, 0, 90, 1})                        \
      ->Args({1000000, 10000, 0, 90, 1})->Args({1000000, 10000, 60, 90, 1})                 \
      ->Unit(benchmark::kSecond)->Iterations(1)
GPUFLEET_HETERO(fifo, "fifo");
GPUFLEET_HETERO(las, "las");
GPUFLEET_HETERO(hetero_las, "hetero-las");
// The heterogeneity-agnostic ablation takes the straightforward path (every running job in queue
// order on every point).
BENCHMARK_CAPTURE(BM_Hetero, hetero_las_agnostic, "hetero-las(aware=false)")
    ->Args({10000, 120, 0, 90, 1})->Args({100000, 1200, 0, 90, 1})
    ->Unit(benchmark::kSecond)->Iterations(1);

// The reference (pre-incremental) LAS on the single-model synthetic inputs, same jobs and pool.
void BM_LasReference(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(1));
  std::vector<JobSpec> jobs = Synthetic(static_cast<int>(state.range(0)), gpus, 1,
                                        state.range(3) / 100.0);
  GpuPool pool = GpuPool::FromJson({{"gpu", gpus}}).value();
  SimOptions o;
  o.record_timeseries = false;
  o.scheduling_interval = static_cast<double>(state.range(2));
  o.placement = state.range(4) != 0 ? "binpack" : "";
  double avg = 0;
  for (auto _ : state) {
    jobtime::reference::LasReference p(true);
    auto r = Simulate(pool, jobs, p, o);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    else avg = r->summary.avg_jct;
  }
  state.counters["avg_jct"] = avg;
}
BENCHMARK(BM_LasReference)
    ->Args({100000, 1000, 0, 98, 1})->Args({1000000, 10000, 0, 98, 1})
    ->Unit(benchmark::kSecond)->Iterations(1);

// The reference (pre-incremental) hetero-las on the smaller inputs, same jobs and pool.
void BM_HeteroReference(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int gpus = static_cast<int>(state.range(1));
  std::vector<JobSpec> jobs = SyntheticHetero(n, gpus, 1, state.range(3) / 100.0);
  GpuPool pool = HeteroPool(gpus);
  SimOptions o;
  o.record_timeseries = false;
  o.scheduling_interval = static_cast<double>(state.range(2));
  o.placement = state.range(4) != 0 ? "binpack" : "";
  double avg = 0;
  for (auto _ : state) {
    jobtime::reference::HeteroLasReference p(2.0, 4.0, true, true, true);
    auto r = Simulate(pool, jobs, p, o);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    else avg = r->summary.avg_jct;
  }
  state.counters["avg_jct"] = avg;
}
BENCHMARK(BM_HeteroReference)
    ->Args({10000, 120, 0, 90, 1})->Args({100000, 1200, 0, 90, 1})
    ->Args({1000000, 10000, 60, 90, 1})->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace gpufleet::sim
