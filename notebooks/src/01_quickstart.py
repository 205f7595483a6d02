# %% [markdown]
# # gpufleet quickstart: whole and shared GPUs on a small cluster
#
# This notebook builds the cluster of `examples/scenarios/quickstart.yaml` — a V100 node that
# takes whole and shared GPUs, an 8-GPU H100 board with NVLink partitions and PCIe/NUMA
# topology, and a T4 node shared by memory only — places a mix of pods, and draws the per-GPU
# memory and core usage.
#
# Request vocabularies follow the systems they come from: `nvidia.com/gpu` (NVIDIA device
# plugin), `koordinator.sh/gpu-core|gpu-memory|gpu-memory-ratio` (Koordinator) and
# `aliyun.com/gpu-mem` (Alibaba gpushare).

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import gpufleet

root = Path.cwd() if (Path.cwd() / "examples").exists() else Path.cwd().parent
scenario = gpufleet.load_scenario(root / "examples" / "scenarios" / "quickstart.yaml")
cluster = scenario.cluster
print(cluster.num_nodes, "nodes,", len(scenario.pending), "pods to place")
print("strategies:", gpufleet.strategies())

# %% [markdown]
# ## Filter answers per device
# A pod asking for 12000 MiB of one card does not fit a node whose free memory is spread over
# several cards, even if the total would do.

# %%
probe = gpufleet.Pod("probe", {"aliyun.com/gpu-mem": "12000"})
for node in cluster.node_names():
    print(f"{node:8s}", cluster.filter(probe, node))

# %% [markdown]
# ## Place the pending pods with the topology strategy

# %%
rows = []
for pod in scenario.pending:
    allocation, reason = cluster.place(pod, "topology")
    where = ", ".join(f"{g.type}{g.minor}:{g.core}%/{gpufleet.format_bytes(g.memory_bytes)}"
                      for g in allocation.devices) if allocation else reason
    rows.append((pod.name, allocation.node if allocation else "-", where))
    print(f"{pod.name:13s} {rows[-1][1]:8s} {where}")
cluster.check_invariants()

# %% [markdown]
# The allocation is recorded on the pod as Koordinator's `device-allocated` annotation (and
# gpushare's keys when asked), which is what rebuilds the state after a restart:

# %%
a = cluster.allocation("notebook-a")
notes = a.annotations(gpushare=True)
# gpushare's ASSUME_TIME is the clock at binding (ns): shown only by name, it differs on every run
print({k: ("<binding time>" if k.endswith("ASSUME_TIME") else v) for k, v in notes.items()})
restarted = gpufleet.Cluster.restore(cluster.snapshot())
assert restarted == cluster

# %% [markdown]
# ## Per-GPU usage
# `device_usage()` returns one column per field and one row per device (`pd.DataFrame(u)` takes
# it as is); `core_used` and `memory_used` are read-only NumPy views of the core's own buffers
# (no copy).

# %%
u = cluster.device_usage()
gpu = u["is_gpu"]
labels = [f"{n}/{m}" for n, m, g in zip(u["node_name"], u["minor"], gpu) if g]
mem = u["memory_used"][gpu] / u["memory_capacity"][gpu] * 100
core = u["core_used"][gpu]
x = np.arange(len(labels))
fig, ax = plt.subplots(figsize=(10, 3.5))
ax.bar(x - 0.2, mem, 0.4, label="memory used %")
ax.bar(x + 0.2, core, 0.4, label="core used %")
ax.set_xticks(x, labels, rotation=60, ha="right")
ax.set_ylim(0, 105)
ax.set_ylabel("% of the GPU")
ax.set_title("Per-GPU usage after placement")
ax.legend()
fig.tight_layout()
assert mem.max() <= 100 and core.max() <= 100

# %% [markdown]
# ## MIG: GPUs split into instances
# `examples/scenarios/mig.yaml` declares an A100 80GB split into 3g.40gb + 2g.20gb + 1g.10gb
# (NVIDIA's *mixed* strategy: each instance is requested as `nvidia.com/mig-<profile>`) beside a
# whole A100, and two H100s split into seven 1g.10gb each (the *single* strategy: the instances
# are the node's `nvidia.com/gpu`). The geometry (profiles, sizes, start slots) is NVIDIA's
# published table, `gpufleet._core.mig_geometry()`; a layout it does not allow is refused.

# %%
mig = gpufleet.load_scenario(root / "examples" / "scenarios" / "mig.yaml")
for pod in mig.pending:
    allocation, reason = mig.cluster.place(pod)
    where = ", ".join(f"{g.type}/{g.minor}" for g in allocation.devices) if allocation else reason
    print(f"{pod.name:12s} {allocation.node if allocation else '-':12s} {where}")
a100 = {p["name"]: p["start_slots"] for p in gpufleet._core.mig_geometry()[1]["profiles"]}
print("A100-80GB start slots:", a100)
try:
    mig.cluster.add_node({"name": "bad", "devices": [{"type": "gpu", "minor": 0, "model": "A100-80GB",
                                                      "mig": [{"profile": "3g.40gb", "start": 2}]}]})
except ValueError as e:
    print("refused:", e)
