"""Queue trees: hierarchical queues and fair sharing as KAI Scheduler, Kueue and Volcano define
them (docs/queues.md).

A queue tree is a list of queue dicts (``{"name", "parent", "weight", "priority", "quota",
"limit", "guarantee", "borrowing_limit", "lending_limit", "over_quota_weight", ...}``) or the
systems' own objects read unchanged from YAML (KAI ``Queue``, Kueue ``ClusterQueue`` and
``Cohort``, Volcano ``Queue``)::

    from gpufleet import queues
    specs = queues.read_queue_objects("kueue-cluster-queues.yaml")
    queues.fair_shares(specs, capacity={"gpu": 64}, requests={"team-a": {"gpu": 40}}, policy="drs")
    r = queues.simulate_queues(jobs, specs, gpus=64, policy="kai", k_value=1, half_life=86400)
    r.summary          # per queue: jobs, mean JCT, preemptions, mean GPUs held and fair share
    r.shares           # per scheduling point and queue: held, fair_share, demand

Fair-share policies: ``"kai"`` (KAI's division), ``"drs"`` (Kueue's Dominant Resource Share) and
``"capacity"`` (Volcano's capacity plugin). The same tree drives the engine (the ``queuetree``
plugin and ``treereclaim`` action; ``Engine.add_queue`` takes these dicts) and the multi-tenant
simulation here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gpufleet import _core
from gpufleet._lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

__all__ = [
    "POLICIES",
    "QueueSimResult",
    "check_tree",
    "dominant_resource_shares",
    "fair_shares",
    "queue_specs",
    "read_queue_objects",
    "simulate_queues",
]

POLICIES = ("kai", "drs", "capacity")


def read_queue_objects(source: str | Path | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Queue dicts from a YAML/JSON file of KAI, Kueue or Volcano objects (several documents, or
    a ``kind: List``), or from such objects already read. Objects of other kinds are errors."""
    if isinstance(source, (str, Path)):
        from gpufleet.documents import read_documents

        path = Path(source)
        docs: list[Any] = []
        for d in read_documents(path):
            if isinstance(d, Mapping) and d.get("kind") == "List":
                docs.extend(d.get("items") or [])
            elif d is not None:
                docs.append(d)
        try:
            return list(_core.queue_objects(docs))
        except (ValueError, KeyError) as e:
            raise ValueError(f"{path}: {e}") from None
    return list(_core.queue_objects([dict(o) for o in source]))


def queue_specs(queues: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Queue dicts from a mix of gpufleet queue dicts and KAI/Kueue/Volcano objects."""
    items = [dict(q) for q in queues]
    objects = [q for q in items if "apiVersion" in q and "kind" in q]
    plain = [q for q in items if not ("apiVersion" in q and "kind" in q)]
    return plain + (list(_core.queue_objects(objects)) if objects else [])


def check_tree(specs: Sequence[Mapping[str, Any]]) -> None:
    """Raise ValueError naming the first problem of a queue tree (a cycle of parents, a child's
    guarantee above its parent's, a borrowing limit on a queue without a cohort, ...)."""
    _core.queue_tree_check(queue_specs(specs))


def fair_shares(specs: Sequence[Mapping[str, Any]], capacity: Mapping[str, Any],
                requests: Mapping[str, Mapping[str, Any]], policy: str = "kai",
                usage: Mapping[str, Mapping[str, float]] | None = None,
                k_value: float = 0.0) -> pd.DataFrame:
    """Every queue's fair share (one row per queue, one column per resource) for what the leaf
    queues ask for (``requests``: {leaf: {resource: amount}}, held plus pending) of ``capacity``.
    ``usage`` ({queue: {resource: fraction of capacity used in the past}}) and ``k_value`` make
    the kai division time-aware. cpu is in milli-cores, memory in bytes, gpu in GPUs."""
    shares = _core.queue_fair_shares(queue_specs(specs), dict(capacity),
                                     {k: dict(v) for k, v in requests.items()}, policy,
                                     None if usage is None else {k: dict(v) for k, v in usage.items()},
                                     float(k_value))
    frame = pd.DataFrame.from_dict(shares, orient="index")
    frame.index.name = "queue"
    return frame


def dominant_resource_shares(specs: Sequence[Mapping[str, Any]],
                             usage: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Kueue's Dominant Resource Share of every queue for what the leaves hold (a fraction: Kueue
    shows 1000 times it; infinite for weight 0)."""
    return dict(_core.queue_drs(queue_specs(specs), {k: dict(v) for k, v in usage.items()}))


@dataclass(frozen=True)
class QueueSimResult:
    """A multi-tenant simulation: ``jobs`` (the input frame with ``queue``, ``start``, ``end``,
    ``jct``, ``wait`` and ``preemptions``), ``shares`` (per scheduling point and queue: ``time``,
    ``queue``, ``held``, ``fair_share``, ``demand``), ``summary`` (per leaf queue) and totals."""

    jobs: pd.DataFrame
    shares: pd.DataFrame
    scheduling_points: int
    preemptions: int
    leaves: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pd.DataFrame:
        """Per leaf queue: jobs, mean and 95th-percentile JCT (s), mean wait (s), preemptions,
        GPU-hours run, and the time-weighted mean GPUs held and fair share."""
        j = self.jobs
        by = j.groupby("queue")
        out = pd.DataFrame({
            "jobs": by.size(),
            "mean_jct": by["jct"].mean(),
            "p95_jct": by["jct"].quantile(0.95),
            "mean_wait": by["wait"].mean(),
            "preemptions": by["preemptions"].sum(),
            "gpu_hours": (j["duration"] * j["num_gpu"]).groupby(j["queue"]).sum() / 3600.0,
        })
        s = self.shares
        if len(s):
            s = s.sort_values(["queue", "time"])
            span = s.groupby("queue")["time"].diff().shift(-1).fillna(0.0)
            weights = span.groupby(s["queue"]).transform("sum").replace(0, np.nan)
            out["mean_held"] = (s["held"] * span / weights).groupby(s["queue"]).sum()
            out["mean_fair_share"] = (s["fair_share"].clip(upper=1e12) * span / weights).groupby(
                s["queue"]).sum()
        return out.reindex([q for q in self.leaves if q in out.index])


def simulate_queues(jobs: pd.DataFrame, specs: Sequence[Mapping[str, Any]], gpus: int,
                    policy: str = "kai", queue_column: str = "queue", k_value: float = 0.0,
                    half_life: float = 0.0, window: float = 0.0, preempt: bool = True,
                    interval: float = 0.0, sample_every: float = 0.0) -> QueueSimResult:
    """Run a job trace (the unified job schema plus a column naming each job's leaf queue, and
    optionally ``priority``) through a queue tree on ``gpus`` GPUs.

    Every scheduling point computes the tree's fair shares (``policy``; with ``k_value`` > 0 the
    kai division is time-aware, past usage decaying with ``half_life`` seconds over a ``window``),
    starts pending jobs in queue order while GPUs are free and, with ``preempt``, lets queues
    below their share reclaim by the tree's rules (a preempted job keeps its progress).
    ``interval`` > 0 schedules on multiples of that many seconds; ``sample_every`` thins the
    share samples."""
    specs = queue_specs(specs)
    if queue_column not in jobs.columns:
        raise ValueError(f"jobs: no column {queue_column!r} naming each job's queue")
    priority = jobs["priority"] if "priority" in jobs.columns else np.zeros(len(jobs), dtype=np.int64)
    out = _core.simulate_queues(
        specs, int(gpus), np.asarray(jobs["job_id"], dtype=np.int64),
        np.asarray(jobs["submit_time"], dtype=np.float64), np.asarray(jobs["duration"], dtype=np.float64),
        np.asarray(jobs["num_gpu"], dtype=np.int64), [str(q) for q in jobs[queue_column]],
        np.asarray(priority, dtype=np.int64),
        {"policy": policy, "k_value": float(k_value), "half_life": float(half_life),
         "window": float(window), "preempt": bool(preempt), "interval": float(interval),
         "sample_every": float(sample_every)})
    frame = jobs.copy()
    frame["queue"] = [str(q) for q in jobs[queue_column]]
    frame["start"] = out["start"]
    frame["end"] = out["end"]
    frame["jct"] = frame["end"] - frame["submit_time"]
    frame["wait"] = frame["jct"] - frame["duration"]
    frame["preemptions"] = out["preemptions"]
    names = list(out["queue_names"])
    shares = pd.DataFrame({
        "time": out["sample_time"],
        "queue": pd.Categorical.from_codes(out["sample_queue"], categories=names),
        "held": out["sample_held"],
        "fair_share": out["sample_fair_share"],
        "demand": out["sample_demand"],
    })
    children = {q.get("parent") for q in specs if q.get("parent")}
    leaves = [n for n in names if n not in children]
    return QueueSimResult(frame, shares, int(out["scheduling_points"]), int(out["total_preemptions"]),
                          leaves)
