# %% [markdown]
# # Queues and gangs
#
# Two teams share a 32-GPU cluster through queues with weights 1:3. Over a series of scheduling
# cycles we watch gang jobs start whole or not at all, the `reclaim` action give the heavier queue
# its deserved share back, and `preempt` make room for a high-priority job inside a queue. The
# engine and its configuration are described in `docs/engine.md`.

# %%
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from gpufleet.engine import Engine

config = {
    "actions": "enqueue, allocate, preempt, reclaim, backfill",
    "tiers": [
        {"plugins": ["priority", "gang"]},
        {"plugins": ["drf", "predicates", "proportion", "nodeorder", "deviceshare"]},
    ],
}
eng = Engine(config)
for i in range(4):
    eng.add_node({"name": f"n{i}", "cpu": "96", "memory": "768Gi",
                  "gpus": {"count": 8, "model": "A100", "memory": "80Gi"}})
eng.add_queue("team-a", weight=1)
eng.add_queue("team-b", weight=3)

def job(name, queue, replicas, min_available, priority=0, gpus=1):
    return {"name": name, "queue": queue, "replicas": replicas, "min_available": min_available,
            "priority": priority, "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": gpus}}

# %% [markdown]
# ## The script
#
# * cycle 0: team-a submits four elastic jobs (8 one-GPU workers each, at least 1 to run); team-b is
#   idle, so team-a may use the whole cluster (its deserved share is capped by demand only).
# * cycle 3: team-b submits three 8-worker gangs (all or nothing). Its deserved share becomes 24 of
#   32 GPUs (weights 1:3); `reclaim` evicts team-a's surplus workers to start them.
# * cycle 6: team-a submits a high-priority 4-GPU gang; its queue is at its share, so `preempt`
#   evicts lower-priority team-a workers inside the queue.
# * cycle 9: one of team-b's gangs finishes; the freed GPUs go back to team-a.

# %%
events = {
    0: lambda: [eng.submit(job(f"a-sweep-{k}", "team-a", 8, 1)) for k in range(4)],
    3: lambda: [eng.submit(job(f"b-train-{k}", "team-b", 8, 8)) for k in range(3)],
    6: lambda: eng.submit(job("a-urgent", "team-a", 4, 4, priority=10)),
    9: lambda: eng.delete("b-train-0"),
}
rows, log, evicted, results = [], [], [], []
for cycle in range(12):
    if cycle in events:
        events[cycle]()
    r = eng.run_cycle()
    results.append(r)
    for q in r.queues.itertuples():
        rows.append({"cycle": cycle, "queue": q.queue, "allocated": q.allocated_gpu, "deserved": q.deserved_gpu})
    log.append({"cycle": cycle, "binds": len(r.binds), "evictions": len(r.evictions),
                "evicted jobs": ", ".join(sorted(set(r.evictions["job"]))),
                "pending": ", ".join(sorted(r.pending))})
    if len(r.evictions):
        evicted.append(r.evictions.assign(cycle=cycle))
    eng.cluster.check_invariants()
shares = pd.DataFrame(rows)
pd.DataFrame(log).set_index("cycle")

# %% [markdown]
# Every job's running count is either zero or at least its `min_available`: no gang runs partly.

# %%
jobs = eng.jobs()
assert ((jobs.running == 0) | (jobs.running >= jobs.min_available)).all()
jobs

# %% [markdown]
# Why were tasks evicted? Each eviction carries its reason:

# %%
reasons = pd.concat(evicted)[["cycle", "job", "task", "reason"]]
reasons.groupby(["cycle", "job"]).first()

# %% [markdown]
# The tables are built from each cycle's native result, `r.native`: immutable objects with
# attributes, a readable `repr` and `to_dict()` (the plain data `gpufleet cycle -o json` prints).
# Here is cycle 3, where `reclaim` made room for team-b's gangs:

# %%
c3 = results[3].native
assert c3.evictions and all("reclaimed for queue team-b" in e.reason for e in c3.evictions)
print(c3)
print(c3.evictions[0])
print(c3.binds[0], c3.binds[0].devices)
print({q.queue: q.deserved.gpu for q in c3.queues})
c3.binds[0].to_dict()

# %% [markdown]
# ## Each queue's GPUs against its deserved share

# %%
fig, ax = plt.subplots(figsize=(8, 4))
for (queue, grp), color in zip(shares[shares.queue != "default"].groupby("queue"), ["tab:blue", "tab:orange"]):
    ax.step(grp.cycle, grp.allocated, where="post", color=color, label=f"{queue} allocated")
    ax.step(grp.cycle, grp.deserved, where="post", color=color, linestyle="--", label=f"{queue} deserved")
ax.set_xlabel("cycle")
ax.set_ylabel("GPUs")
ax.set_title("Queue shares (weights 1:3) over scheduling cycles")
ax.legend(loc="center right")
fig.tight_layout()

# %%
final = shares[shares.cycle == shares.cycle.max()].set_index("queue")
final

# %% [markdown]
# ## A large gang behind a stream of small jobs (starvation)
#
# Two 8-GPU nodes, a gang of two 8-GPU workers submitted early, and a stream of 1-GPU jobs: three
# arrive every cycle, each runs one or two cycles. Small jobs may pass the gang while it cannot
# start, so the cluster stays busy; but each GPU freed is taken by the next small job, and the
# gang would wait forever. With the `reservation` plugin (as in `examples/scheduler-conf.yaml`,
# `after_cycles: 3`) the gang becomes the *target* after three cycles: the engine plans it on the
# nodes that need the least draining and holds GPUs freed there for it, while small jobs keep
# using what the plan does not need. The gang starts once the work running at its election has
# finished (docs/engine.md). Held GPUs are reported per cycle (`r.held`, `r.held_gpus`).

# %%
def starvation_stream(reservation, cycles=14):
    tiers = [{"plugins": ["priority", "gang"]},
             {"plugins": ["drf", "predicates", "proportion", "nodeorder", "deviceshare"]}]
    if reservation:
        tiers[1]["plugins"].append({"name": "reservation", "arguments": {"after_cycles": 3}})
    e = Engine({"actions": "enqueue, allocate, preempt, reclaim, backfill", "tiers": tiers})
    for n in ("n0", "n1"):
        e.add_node({"name": n, "cpu": "128", "memory": "1024Gi",
                    "gpus": {"count": 8, "model": "A100", "memory": "80Gi"}})
    runs, started, counter = {}, {}, [0]

    def small():
        k = counter[0]
        counter[0] += 1
        e.submit({"name": f"small{k}", "replicas": 1, "creation": 1 + k if k < 6 else 10 + k,
                  "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
        runs[f"small{k}"] = 1 + k % 2

    for _ in range(6):
        small()
    e.submit({"name": "gang", "replicas": 2, "creation": 8, "requests": {"cpu": "1", "nvidia.com/gpu": 8}})
    rows, gang_started = [], None
    for c in range(cycles):
        for name, at in list(started.items()):
            if c - at >= runs[name]:
                e.delete(name)
                del started[name]
        for _ in range(3):
            small()
        r = e.run_cycle()
        for job in set(r.binds["job"]):
            if job == "gang":
                gang_started = c
            else:
                started.setdefault(job, c)
        jobs = e.jobs().set_index("name")
        gang_gpus = 16 if gang_started is not None else 0
        small_gpus = sum(jobs.loc[n, "running"] for n in started if n in jobs.index)
        rows.append({"cycle": c, "small jobs": small_gpus, "gang": gang_gpus, "held for the gang": r.held_gpus,
                     "idle": 16 - small_gpus - gang_gpus - r.held_gpus, "target": r.target})
    return pd.DataFrame(rows).set_index("cycle"), gang_started

with_policy, started_with = starvation_stream(True)
without_policy, started_without = starvation_stream(False)
print(f"gang started at cycle {started_with} with the policy, {started_without} without it")
with_policy

# %% [markdown]
# Cycle by cycle: GPUs running small jobs, GPUs held for the target, GPUs running the gang and idle
# GPUs. Without the policy the gang never starts and half the cluster idles; with it no GPU
# idles while the gang waits (held GPUs are taken, not idle) and the gang starts.

# %%
assert started_with is not None and started_without is None
waiting = with_policy.loc[3:started_with - 1]
assert (waiting["idle"] == 0).all() and (waiting["held for the gang"] > 0).all()
assert (with_policy["held for the gang"] <= 16).all()

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
colors = {"small jobs": "tab:blue", "gang": "tab:green", "held for the gang": "tab:orange", "idle": "lightgrey"}
for ax, (title, frame) in zip(axes, [("without the reservation plugin", without_policy),
                                     ("with reservation(after_cycles=3)", with_policy)]):
    cols = list(colors)
    ax.stackplot(frame.index, [frame[c] for c in cols], labels=cols, colors=[colors[c] for c in cols], step="post")
    ax.set_title(title)
    ax.set_xlabel("cycle")
axes[0].set_ylabel("GPUs (of 16)")
axes[1].legend(loc="lower right", fontsize=8)
fig.tight_layout()
