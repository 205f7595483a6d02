"""The Alibaba PAI-2020 simulator (github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2020/simulator``,
the NSDI'22 "MLaaS in the Wild" study), reproduced: its trace preparation, its placement and its five
allocation policies, so that its README's table can be checked (docs/simulator.md, "PAI-2020
simulator").

>>> import gpufleet.traces as T
>>> from gpufleet.pai2020 import simulate_pai
>>> jobs = T.load_pai2020_jobs("pai_job_duration_estimate_100K.csv")     # doctest: +SKIP
>>> simulate_pai(jobs, "sjf").summary["avg_jct"]                         # doctest: +SKIP

What that simulator does, and so what this module does:

* **Trace preparation.** It reads at most ``10 x num_jobs + 1`` rows of the file, draws ``num_jobs`` of
  them with Python's ``random.shuffle`` seeded by ``seed`` (reproduced bit for bit: the same
  generator), then, with an arrival rate, sorts them by (submit time, job id) and lets ``arrival_rate``
  jobs arrive every ``interval`` seconds (0, 60, 120, ...). A job wider than the cluster is cut to
  the cluster's size. GPUs and CPUs count in hundredths (``round(100 x num_gpu)``), durations in
  whole seconds (truncated, 0 runs 1 s), submit times rounded.
* **Placement.** One node holding every GPU and CPU (its default; ``num_nodes > 1`` gives nodes of 8
  GPUs and 96 CPUs, taken by id with ``packing`` or least utilised first otherwise). A job's
  instances are placed all or nothing.
* **Allocation.** At every second where something changed, the waiting jobs in the policy's order
  (its key, then the job id) each start if their GPUs and CPUs fit: a job that does not fit is
  passed over, later ones may start (backfill). No preemption (the simulator's preemption never
  fires: its check compares a boolean with 0).
* **Figures.** Each instance counts as a job (``jobs_done`` is the number of instances); JCT is
  finish - arrival, waiting time JCT - duration, and the makespan the second after the last finish.
  With ``repeat > 1`` each repetition draws again from the same generator and the figures are
  averaged, ``jobs_done`` summed.

The simulator steps through every second; here time jumps from event to event (arrivals and
finishes), which gives the same schedule because nothing changes in between.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["POLICIES", "PaiResult", "prepare_pai_jobs", "readme_table", "simulate_pai"]

#: The allocation policies of the simulator's table: the column each orders its waiting jobs by.
POLICIES: dict[str, str] = {
    "sjf": "duration",          # shortest job first, knowing each duration (an oracle)
    "sju": "user_dur",          # SJF on the estimate from the user
    "sjg": "group_dur",         # ... from the group and user
    "sjgg": "group_gpu_dur",    # ... from the group, user and GPU request
    "fifo": "submit_time",      # arrival order
}

# The simulator's node when num_nodes > 1, and its CPU-per-GPU ratio (156,576 CPUs / 6,742 GPUs).
_NODE_GPUS, _NODE_CPUS = 8, 96
_CPUS_PER_GPU = 23.22
# The simulator re-reads at most this many times num_jobs rows of the file (plus one).
_ROWS_PER_JOB = 10


@dataclass
class PaiResult:
    """Outcome of :func:`simulate_pai`: ``jobs`` (the last repetition: one row per drawn job with its
    arrival, start, finish, JCT and waiting time) and ``summary`` (``avg_jct``,
    ``avg_queueing_delay`` (the README's wait_time), ``makespan``, ``jobs_done``, ``num_jobs``,
    ``policy``, ``seed``)."""

    jobs: pd.DataFrame
    summary: dict[str, Any]


def _columns(jobs: pd.DataFrame) -> dict[str, np.ndarray]:
    """The PAI columns in file order, from :func:`gpufleet.traces.load_pai2020_jobs` or from its
    unified-schema conversion."""
    unified = "gpu_per_inst" in jobs.columns
    need = ["job_id", "submit_time", "num_inst", "gpu_per_inst" if unified else "num_gpu",
            "cpu_per_inst" if unified else "num_cpu", "trace_duration" if unified else "duration"]
    if missing := [c for c in need if c not in jobs.columns]:
        raise ValueError(f"jobs lack the PAI-2020 columns {missing} (gpufleet.traces.load_pai2020_jobs)")
    frame = jobs.sort_values("trace_row", kind="stable") if "trace_row" in jobs.columns else jobs
    out = {"job_id": frame["job_id"].to_numpy(np.int64), "submit": frame["submit_time"].to_numpy(np.float64),
           "inst": frame["num_inst"].to_numpy(np.int64),
           "gpu": frame[need[3]].to_numpy(np.float64), "cpu": frame[need[4]].to_numpy(np.float64),
           "duration": frame[need[5]].to_numpy(np.float64)}
    for column in POLICIES.values():
        if column in frame.columns and column not in ("duration", "submit_time"):
            out[column] = frame[column].to_numpy(np.float64)
    return out


def prepare_pai_jobs(jobs: pd.DataFrame, num_jobs: int = 20000, arrival_rate: int | None = 1000,
                     interval: int = 60, seed: int = 42, repeat: int = 1) -> list[pd.DataFrame]:
    """The simulator's trace preparation: per repetition, the drawn jobs (file columns plus
    ``arrival``, the submit time the run uses), in the order the simulator holds them.

    ``arrival_rate=None``, or any negative rate (the simulator's -1), keeps the trace's submit times."""
    if not isinstance(num_jobs, (int, np.integer)) or num_jobs < 1:
        raise ValueError(f"num_jobs: expected a whole number >= 1, got {num_jobs!r}")
    if arrival_rate is not None and (not isinstance(arrival_rate, (int, np.integer)) or arrival_rate == 0):
        raise ValueError(f"arrival_rate: expected jobs per interval >= 1, or -1 or None, got {arrival_rate!r}")
    if arrival_rate is not None and arrival_rate < 0:
        arrival_rate = None  # the simulator's -1: the trace's own submit times
    if not isinstance(interval, (int, np.integer)) or interval < 0:
        raise ValueError(f"interval: expected whole seconds >= 0, got {interval!r}")
    if not isinstance(repeat, (int, np.integer)) or repeat < 1:
        raise ValueError(f"repeat: expected a whole number >= 1, got {repeat!r}")
    cols = _columns(jobs)
    rows = min(len(cols["job_id"]), _ROWS_PER_JOB * int(num_jobs) + 1)
    if rows == 0:
        raise ValueError("the trace has no jobs")
    rng = random.Random(seed)
    frame = pd.DataFrame({k: v[:rows] for k, v in cols.items()})
    frame["arrival"] = np.round(frame["submit"]).astype(np.int64)
    out = []
    for _ in range(repeat):
        picked = list(range(rows))
        if num_jobs <= rows:
            rng.shuffle(picked)
            picked = picked[:num_jobs]
        drawn = frame.iloc[picked].reset_index(drop=True)
        rng.randint(1000, 9999)  # the simulator draws two seeds per repetition (a log line, the cluster)
        rng.randint(1000, 9999)
        if arrival_rate is not None:
            drawn = drawn.sort_values(["arrival", "job_id"], kind="stable").reset_index(drop=True)
            drawn["arrival"] = (np.arange(len(drawn)) // int(arrival_rate)) * int(interval)
        out.append(drawn)
    return out


def _units(drawn: pd.DataFrame, total_gpu: int, total_cpu: int) -> tuple[np.ndarray, ...]:
    """Hundredths of GPUs and CPUs per instance (cut to the cluster), whole-second durations."""
    gpu = np.minimum(np.round(100 * drawn["gpu"].to_numpy()).astype(np.int64), total_gpu)
    cpu = np.minimum(np.round(100 * drawn["cpu"].to_numpy()).astype(np.int64), total_cpu)
    duration = np.maximum(drawn["duration"].to_numpy().astype(np.int64), 1)
    return gpu, cpu, duration


class _Nodes:
    """Idle hundredths of GPUs and CPUs per node, and the simulator's node choice."""

    def __init__(self, count: int, gpus: int, cpus: int, packing: bool) -> None:
        self.cap_g, self.cap_c = gpus * 100, cpus * 100
        self.idle_g = [self.cap_g] * count
        self.idle_c = [self.cap_c] * count
        self.packing = packing

    def _util(self, n: int) -> int:
        cpus = 1 - self.idle_c[n] / self.cap_c
        if self.cap_g > 0:
            return round(100 * ((1 - self.idle_g[n] / self.cap_g) + cpus) / 2)
        return round(100 * cpus)

    def place(self, g: int, c: int, inst: int) -> list[tuple[int, int]] | None:
        """Nodes and instance counts for a job, or None when its instances do not all fit."""
        nodes = range(len(self.idle_g))
        if not self.packing:
            nodes = sorted(nodes, key=self._util)
        if inst == 1:
            for n in nodes:
                if g <= self.idle_g[n] and c <= self.idle_c[n]:
                    return [(n, 1)]
            return None
        plan, placed = [], 0
        for n in nodes:
            k = min(self.idle_g[n] // g if g else inst, self.idle_c[n] // c if c else inst)
            if placed + k >= inst:
                plan.append((n, inst - placed))
                return plan
            if k > 0:
                plan.append((n, k))
                placed += k
        return None

    def take(self, plan: list[tuple[int, int]], g: int, c: int, sign: int) -> None:
        for n, k in plan:
            self.idle_g[n] -= sign * k * g
            self.idle_c[n] -= sign * k * c


def _run(drawn: pd.DataFrame, key: np.ndarray, gpu: np.ndarray, cpu: np.ndarray, duration: np.ndarray,
         nodes: _Nodes) -> tuple[np.ndarray, np.ndarray]:
    """Start and finish time of every drawn job under the order ``key`` (ties by job id)."""
    n = len(drawn)
    arrival = drawn["arrival"].to_numpy(np.int64)
    inst = drawn["inst"].to_numpy(np.int64)
    by_rank = np.lexsort((drawn["job_id"].to_numpy(), key))       # rank -> job
    rank = np.empty(n, np.int64)
    rank[by_rank] = np.arange(n)
    need_g, need_c = (inst * gpu)[by_rank], (inst * cpu)[by_rank]   # whole job, by rank
    need_g_l, need_c_l = need_g.tolist(), need_c.tolist()
    g_l, c_l, inst_l = gpu[by_rank].tolist(), cpu[by_rank].tolist(), inst[by_rank].tolist()
    dur_l = duration[by_rank].tolist()
    free_g, free_c = sum(nodes.idle_g), sum(nodes.idle_c)
    one_node = len(nodes.idle_g) == 1
    waiting = np.zeros(n, bool)
    n_waiting = 0
    arrivals = np.argsort(arrival, kind="stable")
    arrival_l, ranks_l = arrival[arrivals].tolist(), rank[arrivals].tolist()
    start = np.full(n, -1, np.int64)
    finish = np.full(n, -1, np.int64)
    running: list[tuple[int, int]] = []      # (finish, rank)
    plans: dict[int, list[tuple[int, int]]] = {}
    a = 0
    while a < n or running:
        t = running[0][0] if running else arrival_l[a]
        if a < n and arrival_l[a] < t:
            t = arrival_l[a]
        while running and running[0][0] == t:
            _, r = heapq.heappop(running)
            free_g += need_g_l[r]
            free_c += need_c_l[r]
            nodes.take(plans.pop(r), g_l[r], c_l[r], -1)
        while a < n and arrival_l[a] <= t:
            waiting[ranks_l[a]] = True
            n_waiting += 1
            a += 1
        if not n_waiting:
            continue
        candidates = np.flatnonzero(waiting & (need_g <= free_g) & (need_c <= free_c))
        i = 0
        while i < len(candidates) and (free_g > 0 or free_c > 0):
            r = int(candidates[i])
            if need_g_l[r] > free_g or need_c_l[r] > free_c:
                rest = candidates[i + 1:]
                candidates = rest[(need_g[rest] <= free_g) & (need_c[rest] <= free_c)]
                i = 0
                continue
            i += 1
            plan = [(0, inst_l[r])] if one_node else nodes.place(g_l[r], c_l[r], inst_l[r])
            if plan is None:
                continue
            nodes.take(plan, g_l[r], c_l[r], 1)
            plans[r] = plan
            free_g -= need_g_l[r]
            free_c -= need_c_l[r]
            waiting[r] = False
            n_waiting -= 1
            start[r], finish[r] = t, t + dur_l[r]
            heapq.heappush(running, (t + dur_l[r], r))
        if n_waiting and not running and a == n:
            stuck = sorted(drawn["job_id"].to_numpy()[by_rank[np.flatnonzero(waiting)]].tolist())
            raise ValueError(f"jobs {stuck[:5]} never fit the cluster ({len(stuck)} in all; the PAI "
                             "simulator would wait for them forever)")
    return start[rank], finish[rank]


def simulate_pai(jobs: pd.DataFrame, policy: str = "sjf", seed: int = 42, *, num_jobs: int = 20000,
                 arrival_rate: int | None = 1000, interval: int = 60, num_gpus: int = 6500,
                 num_cpus: int | None = None, num_nodes: int = 1, packing: bool = False,
                 repeat: int = 1) -> PaiResult:
    """Run the PAI-2020 simulator's ``policy`` (:data:`POLICIES`, any case) on a PAI-2020 trace.

    Defaults are the README's table: 20,000 jobs drawn with seed 42, 1,000 arriving per minute, one
    node of 6,500 GPUs and ``round(23.22 x num_gpus)`` CPUs. ``num_nodes > 1`` ignores ``num_gpus``
    and ``num_cpus`` and builds nodes of 8 GPUs and 96 CPUs, as the simulator does; ``packing``
    takes nodes by id, otherwise the least utilised first."""
    name = str(policy).lower()
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"seed: expected a whole number, got {seed!r:.60}")
    if not isinstance(packing, (bool, np.bool_)):
        raise TypeError(f"packing: expected true or false, got {packing!r:.60}")
    if name not in POLICIES:
        raise ValueError(f"unknown PAI-2020 policy {policy!r}; known: {', '.join(POLICIES)}")
    if not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
        raise ValueError(f"num_nodes: expected a whole number >= 1, got {num_nodes!r}")
    if num_nodes == 1:
        if not isinstance(num_gpus, (int, np.integer)) or num_gpus < 0:
            raise ValueError(f"num_gpus: expected a whole number >= 0, got {num_gpus!r}")
        cpus = round(_CPUS_PER_GPU * num_gpus) if num_cpus is None else num_cpus
        if not isinstance(cpus, (int, np.integer)) or cpus < 0:
            raise ValueError(f"num_cpus: expected a whole number >= 0, got {num_cpus!r}")
        shape = (1, int(num_gpus), int(cpus))
    else:
        shape = (int(num_nodes), _NODE_GPUS, _NODE_CPUS)
    column = POLICIES[name]
    figures, last = [], None
    for drawn in prepare_pai_jobs(jobs, num_jobs, arrival_rate, interval, seed, repeat):
        nodes = _Nodes(*shape, packing=bool(packing))
        gpu, cpu, duration = _units(drawn, sum(nodes.idle_g), sum(nodes.idle_c))
        if column == "duration":
            key = duration
        elif column == "submit_time":
            key = drawn["arrival"].to_numpy()
        else:
            if column not in drawn.columns:
                raise ValueError(f"policy {name}: the trace has no {column} column")
            key = drawn[column].to_numpy()
            if np.isnan(key).any():
                bad = drawn["job_id"].to_numpy()[np.isnan(key)][:5].tolist()
                raise ValueError(f"policy {name}: jobs {bad} have no {column}")
        start, finish = _run(drawn, key, gpu, cpu, duration, nodes)
        arrival, inst = drawn["arrival"].to_numpy(), drawn["inst"].to_numpy()
        jct = finish - arrival
        done = int(inst.sum())
        figures.append((float((inst * jct).sum() / done), float((inst * (start - arrival)).sum() / done),
                        float(finish.max() + 1), done))
        last = pd.DataFrame({"job_id": drawn["job_id"], "arrival": arrival, "num_inst": inst,
                             "duration": duration, "start": start, "finish": finish, "jct": jct,
                             "wait_time": start - arrival})
    avg = np.mean([f[:3] for f in figures], axis=0)
    summary = {"policy": name, "seed": int(seed), "num_jobs": len(last), "jobs_done": sum(f[3] for f in figures),
               "avg_jct": float(avg[0]), "avg_queueing_delay": float(avg[1]), "makespan": float(avg[2])}
    return PaiResult(jobs=last, summary=summary)


def readme_table(jobs: pd.DataFrame, policies: tuple[str, ...] = tuple(POLICIES)) -> pd.DataFrame:
    """The PAI-2020 simulator's README table (:data:`gpufleet.published.PAI2020_README`) measured on
    ``jobs`` (``pai_job_duration_estimate_100K.csv``) with the README's settings: one row per policy
    and metric with ``measured``, ``published``, ``difference`` (a fraction of the published figure) and the experiment's ``cpu_s``
    (process CPU time of the run, trace preparation included, the file's reading not)."""
    import time
    from gpufleet.published import PAI2020_README, PAI2020_README_SETTINGS
    rows = []
    for policy in policies:
        began = time.process_time()
        summary = simulate_pai(jobs, policy, **PAI2020_README_SETTINGS).summary
        cpu = time.process_time() - began
        for metric, published in PAI2020_README[policy].items():
            measured = summary[metric]
            rows.append({"policy": policy, "metric": metric, "measured": measured, "published": published,
                         "difference": (measured - published) / published, "cpu_s": cpu})
    return pd.DataFrame(rows)
