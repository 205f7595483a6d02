# %% [markdown]
# # Queue trees and time-aware fairness
#
# Three departments share a 256-GPU cluster through a KAI-style queue tree: each department and
# team has a quota (deserved GPUs), what is left over is shared by over-quota weight, and a queue
# below its fair share reclaims from queues above theirs, never below what they deserve and never
# in a preemption cycle (`docs/queues.md`). We replay three months of a synthetic multi-team trace
# in seconds with `gpufleet.queues.simulate_queues`, once with plain fair shares and once with
# KAI's time-aware fairness, where a queue's over-quota weight moves with its decayed past usage.

# %%

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from gpufleet import queues

DAY = 86400.0
tree = [
    {"name": "research", "quota": {"gpu": 64}},
    {"name": "vision", "parent": "research", "quota": {"gpu": 32}},
    {"name": "llm", "parent": "research", "quota": {"gpu": 32}, "over_quota_weight": {"gpu": 2}},
    {"name": "product", "quota": {"gpu": 64}},
    {"name": "ranking", "parent": "product", "quota": {"gpu": 48}},
    {"name": "ads", "parent": "product", "quota": {"gpu": 16}},
    {"name": "platform", "quota": {"gpu": 32}},
    {"name": "infra", "parent": "platform", "quota": {"gpu": 32}},
]
queues.check_tree(tree)
queues.fair_shares(tree, capacity={"gpu": 256},
                   requests={"vision": {"gpu": 100}, "llm": {"gpu": 200}, "ranking": {"gpu": 40},
                             "ads": {"gpu": 40}, "infra": {"gpu": 10}})[["gpu"]]

# %% [markdown]
# The table above is one division: departments first get their quota (64, 64, 32), the 96 GPUs
# left go by weight to the departments still asking, and each department's share is divided
# among its teams the same way (llm has twice vision's over-quota weight).
#
# ## Three months of a multi-team trace
#
# Research's llm team runs a large burst in the first month and a steady load after; product's
# ranking team is light in the first month and heavy after; the other teams are steady. Each
# team's jobs arrive at random at a rate that keeps the GPUs it asks for, on average, at the
# level given below; jobs take 1 to 8 GPUs for minutes to days.

# %%
rng = np.random.default_rng(8)
def team_jobs(team, gpus, start, end, sizes, hours):
    n = int(gpus * (end - start) * 24 / (np.mean(sizes) * hours))
    return pd.DataFrame({"submit_time": np.sort(rng.uniform(start * DAY, end * DAY, n)), "team": team,
                         "num_gpu": rng.choice(sizes, n),
                         "duration": np.clip(rng.lognormal(np.log(hours * 3600) - 0.5, 1.0, n),
                                             300, 3 * DAY)})
jobs = pd.concat([
    team_jobs("llm", 190, 0, 30, [4, 8], 6), team_jobs("llm", 90, 30, 90, [4, 8], 6),
    team_jobs("vision", 20, 0, 90, [1, 2, 4], 4),
    team_jobs("ranking", 30, 0, 30, [1, 2, 4], 4), team_jobs("ranking", 110, 30, 90, [1, 2, 4], 4),
    team_jobs("ads", 15, 0, 90, [1, 2], 2), team_jobs("infra", 20, 0, 90, [1, 2], 1),
], ignore_index=True).sort_values("submit_time", ignore_index=True)
jobs["job_id"] = np.arange(len(jobs))
jobs["model_name"] = "unknown"
print(f"{len(jobs)} jobs over {jobs.submit_time.max() / DAY:.0f} days")

# %%
runs = {}
for label, params in {"fair share": {}, "time-aware": {"k_value": 1.0, "half_life": 3 * DAY,
                                                       "window": 14 * DAY}}.items():
    runs[label] = queues.simulate_queues(jobs, tree, gpus=256, queue_column="team", policy="kai",
                                         interval=300, sample_every=3600, **params)
    print(f"{label}: {runs[label].scheduling_points} scheduling "
          f"points, {runs[label].preemptions} preemptions")

# %% [markdown]
# ## Each department's share over time
#
# GPUs held (solid) and fair share (dashed) per department. With plain fair shares, research,
# which held most of the cluster during its burst, keeps the same over-quota weight as product
# when product's demand rises on day 30. With time-aware fairness its weight moves down with its
# recent usage (half-life 3 days, window 14 days), so product gets more of what is left over for
# the next two weeks, and the shares even out as research's usage decays.

# %%
fig, axes = plt.subplots(2, 1, figsize=(10, 7), sharex=True, sharey=True)
for ax, (label, r) in zip(axes, runs.items()):
    s = r.shares[r.shares["queue"].isin(["research", "product", "platform"])]
    for (dept, g), color in zip(s.groupby("queue", observed=True), ["C0", "C1", "C2"]):
        ax.plot(g["time"] / DAY, g["held"], color=color, label=f"{dept} held")
        ax.plot(g["time"] / DAY, g["fair_share"].clip(upper=256), color=color, ls="--", lw=0.8)
    ax.set_title(label)
    ax.set_ylabel("GPUs")
axes[0].legend(loc="upper right", ncol=3)
axes[1].set_xlabel("day")
fig.tight_layout()

# %% [markdown]
# ## Per team: job completion time and preemptions

# %%
summary = pd.concat({label: r.summary[["jobs", "mean_jct", "mean_wait", "preemptions", "mean_held"]]
                     for label, r in runs.items()}, axis=1)
summary.round(1)

# %%
def held_by_period(r):
    s = r.shares[r.shares["queue"].isin(["research", "product", "platform"])].copy()
    s["days"] = pd.cut(s["time"] / DAY, [0, 30, 45, 60, 90])
    return s.groupby(["days", "queue"], observed=True)["held"].mean().unstack()
pd.concat({label: held_by_period(r) for label, r in runs.items()}, axis=1).round(1)

# %% [markdown]
# The invariants hold in both runs: no queue is ever reclaimed below its quota and no job is
# preempted by one it preempted before. The property test in `tests/cpp/queue_tree_property_test.cc`
# checks them over random streams; this notebook shows what they cost and buy over months.
