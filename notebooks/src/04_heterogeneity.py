# %% [markdown]
# # Heterogeneity-aware LAS vs heterogeneity-agnostic scheduling
#
# A mixed K80 / P100 / V100 cluster replaying a Gavel trace (Narayanan et al., *Heterogeneity-Aware Cluster
# Scheduling Policies for Deep Learning Workloads*, OSDI 2020; data from github.com/stanford-futuredata/gavel,
# MIT licence) with Gavel's measured per-model throughputs. Each job's speed on a model is its throughput
# there over its V100 throughput. We compare:
#
# * `las` and `hetero-las(aware=false)`: heterogeneity-agnostic (a job lands on a model drawn at random in
#   proportion to its free GPUs, whatever order the cluster lists the models in; plain GPU-seconds);
# * `hetero-las`: the heterogeneity-aware LAS with a two-level feedback queue, fastest-model placement,
#   swaps and upgrades (docs/simulator.md);
# * `gavel-maxmin(aware=false)` vs `gavel-maxmin`: Gavel-style max-min fairness, agnostic vs aware
#   (a native greedy approximation of Gavel's LP, ranking jobs by GPU-count-weighted progress).
# * `gavel-lp(aware=false)` vs `gavel-lp`: Gavel's max-min fairness LP (COIN-OR CLP over job classes),
#   realised with Gavel's round priorities.
#
# The agnostic Gavel baselines behave as Gavel's own do: every model looks the same to them, and a job
# runs wherever each round puts it, so it moves between models from round to round (for `gavel-lp`, the
# centre of the degenerate LP spreads each job's share over the models). gpufleet's older baselines, where
# a running job stays on the model it landed on, are kept under `sticky=true` and compared too.
#
# Without `../shared/data` the notebook uses a synthetic trace with the same three GPU models.
#
# The agnostic draws depend on the simulation seed, so every policy runs with seeds 0-4 and the
# tables report the mean over the seeds with its spread (`gpufleet.sim.compare(..., seeds=range(5))`).

# %%
import matplotlib
matplotlib.use("Agg")
%matplotlib inline
import matplotlib.pyplot as plt
import pandas as pd

import gpufleet.traces as T
from gpufleet.sim import compare, gain, simulate
from gpufleet.plots import jct_cdf, utilization

# %%
from pathlib import Path

def find_shared_data():
    """../shared/data relative to the project (or any parent of the working directory)."""
    for base in [Path.cwd(), *Path.cwd().parents]:
        if (base / "shared" / "data").is_dir():
            return base / "shared" / "data"
    return None

DATA = find_shared_data()
print("shared data:", "found" if DATA is not None else "not found, a synthetic stand-in")

# %%
if DATA is not None:
    tput = T.load_gavel_throughputs(DATA / "gavel" / "simulation_throughputs.json")
    table = tput.pivot_table(index=["job_type", "scale_factor"], columns="gpu_model", values="throughput")
    display(table.head(8).round(3))
    # As `gpufleet simulate` and `gpufleet sweep` read it: every job; a scale factor the table lacks
    # takes its job type's 1-GPU row (missing="single_worker", the default; docs/traces.md).
    jobs = T.load(format="gavel", trace=DATA / "gavel" / "msr" / "0e4a51.trace", throughputs=tput,
                  missing="single_worker").jobs
    cluster = {"k80": 48, "p100": 48, "v100": 48}
else:
    jobs = T.synthetic_jobs(800, seed=1, arrival_rate=1 / 300)
    cluster = {"k80": 16, "p100": 16, "v100": 16}
print(len(jobs), "jobs;", "cluster", cluster)
jobs[["num_gpu", "duration", "throughput_k80", "throughput_p100", "throughput_v100"]].describe().round(2)

# %% [markdown]
# Speed-ups over the K80 differ a lot between job types, which is what a heterogeneity-aware
# scheduler exploits (comparative advantage):

# %%
speedup = (jobs["throughput_v100"] / jobs["throughput_k80"].where(jobs["throughput_k80"] > 0)).dropna()
ax = speedup.plot.hist(bins=40, figsize=(6, 3))
ax.set_xlabel("V100 / K80 throughput")
ax.set_ylabel("jobs");

# %%
policies = ["las", "hetero-las(aware=false)", "hetero-las", "gavel-maxmin(aware=false, sticky=true)",
            "gavel-maxmin(aware=false)", "gavel-maxmin", "gavel-lp(aware=false, sticky=true)",
            "gavel-lp(aware=false)", "gavel-lp"]
SEEDS = range(5)
# placement=None: GPU counts only (the same times, without the device bookkeeping); two runs at a time
# (the simulator releases the GIL); `results` keeps each policy's seed-0 run for the plots below.
results = {}
runs = compare(jobs, cluster, policies, seeds=SEEDS, per_seed=True, workers=2, results=results,
               restore_delay=30, placement=None)
cols = ["avg_jct", "p50_jct", "p99_jct", "avg_queueing_delay", "makespan", "preemptions", "migrations",
        "gpu_utilization", "finish_time_fairness"]
by_policy = runs[cols].astype(float).groupby(level="policy", sort=False)
summary = by_policy.mean()
summary["avg_jct_h"] = summary["avg_jct"] / 3600
summary["avg_jct_h_std"] = by_policy["avg_jct"].std() / 3600
summary["makespan_h_std"] = by_policy["makespan"].std() / 3600
summary.round(2)  # means over the seeds

# %%
pairs = {
    "hetero-las vs hetero-las(aware=false)": ("hetero-las(aware=false)", "hetero-las"),
    "hetero-las vs las": ("las", "hetero-las"),
    "gavel-maxmin vs agnostic (jobs move each round)": ("gavel-maxmin(aware=false)", "gavel-maxmin"),
    "gavel-maxmin vs agnostic, sticky": ("gavel-maxmin(aware=false, sticky=true)", "gavel-maxmin"),
    "gavel-lp vs agnostic (LP centre, jobs move each round)": ("gavel-lp(aware=false)", "gavel-lp"),
    "gavel-lp vs agnostic, sticky (one pooled column)": ("gavel-lp(aware=false, sticky=true)", "gavel-lp"),
}
# Per seed: baseline / aware, then mean, std, min and max over the seeds.
gains = pd.DataFrame({name: gain(runs, base, aware) for name, (base, aware) in pairs.items()}).T
makespan_gains = pd.DataFrame({name: gain(runs, base, aware, "makespan") for name, (base, aware) in pairs.items()}).T
pd.concat({"average-JCT improvement (x)": gains, "makespan improvement (x)": makespan_gains}, axis=1).round(3)

# %%
# Distributions of one draw (seed 0).
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4))
jct_cdf(results, ax=a)
a.set_title("JCT CDF (seed 0)")
utilization({k: results[k] for k in ["las", "hetero-las"]}, ax=b)
b.set_title("GPU utilisation (seed 0)")
fig.tight_layout()

# %% [markdown]
# Where each policy ran the work (seed 0): share of GPU-seconds on each model (aware policies push the
# jobs with the largest speed-ups onto the V100s).

# %%
def model_share(r):
    # The per-job frame has the service (GPU-s x perf factor) and gpu_time; the perf factor differs per
    # model, so service / gpu_time is the job's time-weighted mean factor.
    f = (r.jobs["service"] / r.jobs["gpu_time"]).describe()[["mean", "50%"]]
    return f
pd.DataFrame({k: model_share(r) for k, r in results.items()}).T.round(3).rename(
    columns={"mean": "mean perf factor of GPUs used", "50%": "median"})
