// Simulator throughput (issue 4 targets): the 60-job Tiresias trace replicated 160 times (9,600
// jobs) on 1,280 GPUs with dlas-gpu (target < 0.3 s; Tiresias' own simulator: 33.8 s), and
// 1,000,000 synthetic jobs on 10,000 GPUs with LAS (target < 60 s on one core). FIFO on the same
// inputs is the in-run baseline. Data: $GPUFLEET_SHARED_DATA or ../shared/data.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "gpufleet/sim/simulator.h"

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
// (GPU-seconds asked / GPU-seconds available).
std::vector<JobSpec> Synthetic(int n, int gpus, uint64_t seed, double load) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dur(std::log(1800.0), 1.2);
  std::discrete_distribution<int> g({0.6, 0.2, 0.12, 0.08});
  const int sizes[] = {1, 2, 4, 8};
  double mean_gpu_seconds = (0.6 * 1 + 0.2 * 2 + 0.12 * 4 + 0.08 * 8) * 1800.0 * std::exp(0.72);
  std::exponential_distribution<double> gap(load * gpus / mean_gpu_seconds);
  std::vector<JobSpec> jobs(n);
  double t = 0;
  for (int i = 0; i < n; ++i) {
    jobs[i].id = i;
    jobs[i].submit_time = t;
    jobs[i].num_gpu = sizes[g(rng)];
    jobs[i].duration = std::max(1.0, dur(rng));
    t += gap(rng);
  }
  return jobs;
}

// `devices`: give every start real devices (the default DeviceLedger with binpack) or count GPUs
// only; the timing of the simulated jobs is the same, so the difference is the ledger's cost.
void RunPolicy(benchmark::State& state, const std::vector<JobSpec>& jobs, int gpus,
               const std::string& policy, double interval = 0, bool devices = true) {
  GpuPool pool = GpuPool::FromJson({{"gpu", gpus}}).value();
  SimOptions o;
  o.record_timeseries = false;
  o.scheduling_interval = interval;
  o.placement = devices ? "binpack" : "";
  double avg = 0;
  for (auto _ : state) {
    auto p = MakeJobTimePolicy(policy).value();
    auto r = Simulate(pool, jobs, *p, o);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    else avg = r->summary.avg_jct;
  }
  state.counters["jobs"] = static_cast<double>(jobs.size());
  state.counters["avg_jct"] = avg;
  state.counters["interval_s"] = interval;
  state.counters["devices"] = devices;
}

// range(0): 1 = real devices (default), 0 = GPU counts only.
void BM_Tiresias9600(benchmark::State& state, const char* policy) {
  static const auto jobs = Tiresias9600();
  if (jobs.size() != 9600) {
    state.SkipWithError("60_job.csv not found (set GPUFLEET_SHARED_DATA)");
    return;
  }
  RunPolicy(state, jobs, 1280, policy, 0, state.range(0) != 0);
}
BENCHMARK_CAPTURE(BM_Tiresias9600, fifo, "fifo")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tiresias9600, dlas_gpu, "dlas-gpu")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// range(2): scheduling interval in seconds (0 = on every arrival and completion);
// range(3): offered load in percent; range(4): 1 = real devices (default), 0 = GPU counts only.
void BM_Synthetic(benchmark::State& state, const char* policy) {
  const int n = static_cast<int>(state.range(0));
  const int gpus = static_cast<int>(state.range(1));
  const int load = static_cast<int>(state.range(3));
  static std::vector<JobSpec> jobs;
  static int cached_n = -1, cached_load = -1;
  if (cached_n != n || cached_load != load) {
    jobs = Synthetic(n, gpus, 1, load / 100.0);
    cached_n = n;
    cached_load = load;
  }
  RunPolicy(state, jobs, gpus, policy, static_cast<double>(state.range(2)), state.range(4) != 0);
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

}  // namespace
}  // namespace gpufleet::sim
