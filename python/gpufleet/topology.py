"""Gangs placed by network topology: racks, blocks and multi-node NVLink domains.

A topology is a list of levels read from node labels (Kueue's and KAI's ``Topology`` objects are
accepted unchanged) or Volcano's HyperNode objects; a gang is a list of groups (a leader, workers)
with required and preferred levels, slices and a fit rule (``docs/topology.md``)::

    from gpufleet import Cluster
    from gpufleet.topology import place_gang, rack_cluster

    cluster = rack_cluster(blocks=1, racks=4, nodes_per_rack=4, gpus_per_node=8)
    levels = rack_levels()  # block and rack from Kueue's example labels
    gang = {"name": "train", "groups": [{"name": "workers", "count": 4,
                                         "requests": {RES_NVIDIA_GPU: 8}, "required": "rack"}]}
    place_gang(cluster, levels, gang)            # where it would go
    place_gang(cluster, levels, gang, commit=True)  # and bind it, all or none

``run_stream`` replays a stream of single-GPU pods and gangs on a cluster of racks with one fit
rule, for comparing the rules (notebook 07).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpufleet import _core
from gpufleet.k8s import keys

# Kueue's documented example labels for blocks and racks (any labels work).
BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
HOSTNAME_LABEL = keys.LABEL_HOSTNAME
# GPU feature discovery's label: every node of one multi-node NVLink fabric (a GB200 NVL72 rack)
# carries the same "<cluster UUID>.<clique id>".
NVLINK_CLIQUE_LABEL = keys.LABEL_NVLINK_CLIQUE

FITS = ("best-fit", "least-free-capacity", "largest-fit", "fragmentation")


def place_gang(cluster: Any, topology: Any, gang: dict, *, strategy: str = "binpack",
               commit: bool = False) -> dict:
    """Where ``gang`` goes on ``cluster`` across the levels of ``topology``.

    Returns ``{'placed', 'reason', 'level', 'domain', 'groups': [{'name', 'level', 'domain',
    'nodes': [(node, pods)], 'pods'}]}``; ``pods`` (with the devices each pod got) only with
    ``commit=True``, which binds every pod, all or none. Bad input (an unknown level, a HyperNode
    cycle, a node in two HyperNodes) raises ``ValueError`` with a one-line message and changes
    nothing.
    """
    return _core.place_gang(cluster, topology, gang, strategy, commit)


def domains(cluster: Any, topology: Any) -> pd.DataFrame:
    """Every node's domain on every level (columns level, domain, node); ``attrs['outside']``
    lists the nodes without the labels (no gang with a topology constraint goes there)."""
    d = _core.topology_domains(cluster, topology)
    frame = pd.DataFrame({"level": d["level"], "domain": d["domain"], "node": d["node"]})
    frame.attrs["outside"] = list(d["outside"])
    return frame


def rack_levels(with_block: bool = True, with_host: bool = False) -> dict:
    """The usual levels: block, rack (and host) from the labels above."""
    levels = [{"name": "block", "label": BLOCK_LABEL}] if with_block else []
    levels.append({"name": "rack", "label": RACK_LABEL})
    if with_host:
        levels.append({"name": "host", "label": HOSTNAME_LABEL})
    return {"levels": levels}


def rack_cluster(blocks: int, racks: int, nodes_per_rack: int, gpus_per_node: int = 8) -> Any:
    """A Cluster of ``blocks`` x ``racks`` x ``nodes_per_rack`` GPU nodes named
    ``b<i>-r<j>-n<k>``, labelled with their block, rack and hostname."""
    cluster = _core.Cluster()
    for b in range(blocks):
        for r in range(racks):
            for n in range(nodes_per_rack):
                name = f"b{b}-r{r}-n{n}"
                cluster.add_node({
                    "name": name, "cpu": "128", "memory": "1Ti", "pods": 256,
                    "gpus": {"count": gpus_per_node, "model": "H100", "memory": "80Gi"},
                    "labels": {BLOCK_LABEL: f"b{b}", RACK_LABEL: f"b{b}-r{r}", HOSTNAME_LABEL: name},
                })
    return cluster


@dataclass
class StreamJob:
    """One arrival: ``pods`` pods of ``gpus_per_pod`` whole GPUs, held for ``duration`` seconds."""

    name: str
    arrival: float
    duration: float
    pods: int
    gpus_per_pod: int
    required: str = ""

    @property
    def gpus(self) -> int:
        """GPUs the job holds while it runs (pods times GPUs per pod)."""
        return self.pods * self.gpus_per_pod


def make_stream(n_jobs: int, *, seed: int = 0, gang_share: float = 0.12,
                gang_gpus: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512),
                mean_gap: float = 60.0, mean_duration: float = 3600.0,
                gpus_per_node: int = 8, rack_gpus: int = 128) -> list[StreamJob]:
    """A mix of single-GPU pods and gangs of 8 to 512 GPUs (pods of one whole node each, as
    training gangs run); gangs of up to a rack require a rack, larger ones a block."""
    rng = np.random.default_rng(seed)
    jobs: list[StreamJob] = []
    t = 0.0
    for i in range(n_jobs):
        t += float(rng.exponential(mean_gap))
        duration = float(rng.exponential(mean_duration)) + 60.0
        if rng.random() < gang_share:
            g = int(rng.choice(gang_gpus))
            required = "rack" if g <= rack_gpus else "block"
            jobs.append(StreamJob(f"gang{i}", t, duration, g // gpus_per_node, gpus_per_node, required))
        else:
            jobs.append(StreamJob(f"pod{i}", t, duration, 1, 1))
    return jobs


@dataclass
class StreamResult:
    """Per job: arrival, start, wait, gpus; ``idle_while_large_waits``: GPU-seconds left idle
    while a large gang waited, per fit (the cost of fragmentation)."""

    jobs: pd.DataFrame
    idle_while_large_waits: float
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)


def run_stream(jobs: list[StreamJob], *, fit: str, blocks: int = 2, racks: int = 8,
               nodes_per_rack: int = 16, gpus_per_node: int = 8, large: int = 128,
               strategy: str = "binpack") -> StreamResult:
    """Replays ``jobs`` on a fresh cluster of racks with one fit rule. At every arrival and
    finish, waiting jobs are tried in arrival order and each that fits starts (backfilling, so
    small pods pass a waiting gang, as Kueue and the engine let them). Large gangs (at least
    ``large`` GPUs) are what fragmentation delays; the idle GPU-seconds while one waits are
    summed."""
    if fit not in FITS:
        raise ValueError(f"unknown fit {fit!r} (one of {', '.join(FITS)})")
    cluster = rack_cluster(blocks, racks, nodes_per_rack, gpus_per_node)
    levels = rack_levels(with_block=True)
    total = blocks * racks * nodes_per_rack * gpus_per_node
    events: list[tuple[float, int, str, int]] = []  # (time, order, kind, job index)
    for k, j in enumerate(jobs):
        heapq.heappush(events, (j.arrival, 1, "arrive", k))
    waiting: list[int] = []
    start = np.full(len(jobs), np.nan)
    pods_of: dict[int, list[str]] = {}
    busy = 0
    idle_while_large = 0.0
    now = 0.0
    samples: list[tuple[float, int, int]] = []
    while events:
        t, _, kind, k = heapq.heappop(events)
        if any(jobs[w].gpus >= large for w in waiting):
            idle_while_large += (total - busy) * (t - now)
        now = t
        if kind == "finish":
            for pod in pods_of.pop(k):
                cluster.release(pod)
            busy -= jobs[k].gpus
        else:
            waiting.append(k)
        still: list[int] = []
        for w in waiting:
            j = jobs[w]
            if total - busy < j.gpus:
                still.append(w)
                continue
            group = {"name": "w", "count": j.pods, "requests": {keys.RES_NVIDIA_GPU: j.gpus_per_pod}}
            if j.required:
                group["required"] = j.required
            r = place_gang(cluster, levels, {"name": j.name, "fit": fit, "groups": [group]},
                           strategy=strategy, commit=True)
            if not r["placed"]:
                still.append(w)
                continue
            pods_of[w] = [p["pod"] for g in r["groups"] for p in g["pods"]]
            start[w] = now
            busy += j.gpus
            heapq.heappush(events, (now + j.duration, 0, "finish", w))
        waiting = still
        samples.append((now, busy, sum(jobs[w].gpus for w in waiting if jobs[w].gpus >= large)))
    frame = pd.DataFrame({
        "job": [j.name for j in jobs],
        "arrival": [j.arrival for j in jobs],
        "start": start,
        "gpus": [j.gpus for j in jobs],
    })
    frame["wait"] = frame["start"] - frame["arrival"]
    timeline = pd.DataFrame(samples, columns=["time", "busy_gpus", "large_gang_gpus_waiting"])
    return StreamResult(frame, idle_while_large, timeline)
