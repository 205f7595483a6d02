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
rows, log, evicted = [], [], []
for cycle in range(12):
    if cycle in events:
        events[cycle]()
    r = eng.run_cycle()
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
