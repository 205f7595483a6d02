"""One experiment: the same function in this process, a pool worker or a Ray task, and the
preflight that tries every (trace, policy, options) on a sliver of its trace before a sweep runs."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import SweepError
from .inputs import jobs_for
from .specs import split_spec

__all__ = ["RESERVED", "check_option_names", "preflight", "run_experiment"]

# Keyword arguments of simulate/replay_openb a sweep sets itself: not options.
RESERVED = {"sim": ("jobs", "cluster", "policy", "seed", "progress", "memory_gib"),
            "openb": ("nodes", "pods", "policy", "seed"), "pai2020": ("jobs", "policy", "seed")}
# Summary entries that echo an input (a column or an option of the sweep), not a result.
_NOT_METRICS = ("seed", "stop_at")


def _metrics(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The numeric entries of a run's summary (not the seed, which is a column)."""
    out: dict[str, float | None] = {}
    for k, v in summary.items():
        if hasattr(v, "item"):
            v = v.item()
        if k in _NOT_METRICS or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        out[k] = float(v) if math.isfinite(v) else None
    return out


def run_experiment(kind: str, data: Mapping[str, Any], policy: str, seed: int,
                   options: Mapping[str, Any]) -> dict[str, float | None]:
    """Runs one experiment on loaded trace ``data`` and returns its metrics (the numeric summary
    entries; ``None`` for a value that is not finite)."""
    if kind == "openb":
        from gpufleet.replay import replay_openb
        name, params = split_spec(policy)
        clash = sorted(set(params) & set(options))
        if clash:
            raise ValueError(f"policy {policy!r}: {', '.join(clash)} given in the spec and as an option")
        result = replay_openb(data["nodes"], data["pods"], policy=name, seed=seed, **params, **options)
    elif kind == "pai2020":
        from gpufleet.pai2020 import simulate_pai
        result = simulate_pai(data["jobs"], policy, seed=seed, **options)
    else:
        from gpufleet.sim import simulate
        result = simulate(jobs_for(data, seed), data["cluster"], policy, seed=seed, progress=False, **options)
    return _metrics(result.summary)


def preflight(kind: str, data: Mapping[str, Any], policy: str, options: Mapping[str, Any]) -> None:
    """Runs ``policy`` with ``options`` on a sliver of the trace, so that a bad policy, parameter
    or option fails at once, with the core's own message, instead of in the middle of a sweep."""
    if kind == "openb":
        nodes, pods = data["nodes"], data["pods"]
        gpu_nodes = nodes[nodes["num_gpu"] > 0]
        gpu_pods = pods[pods["num_gpu"] > 0]
        if len(gpu_nodes) and len(gpu_pods):
            nodes = gpu_nodes.nlargest(1, "num_gpu")
            pods = gpu_pods.head(1)
        run_experiment(kind, {"nodes": nodes, "pods": pods}, policy, 0, options)
        return
    if kind == "pai2020":  # its first two jobs: the policy, its estimate column and the options
        run_experiment(kind, {"jobs": data["jobs"].head(2)}, policy, 0, options)
        return
    # The first job and the widest: a job no model can hold is bad input too.
    jobs = jobs_for(data, 0)
    if len(jobs):
        jobs = jobs.iloc[sorted({0, int(jobs["num_gpu"].to_numpy().argmax())})]
    run_experiment(kind, {"jobs": jobs, "cluster": data["cluster"]}, policy, 0, options)


def check_option_names(kind: str, options: Iterable[str]) -> None:
    """SweepError for an option the sweep sets itself for ``kind`` experiments."""
    for name in options:
        if name in RESERVED[kind]:
            raise SweepError(f"option {name!r} is set by the sweep itself for {kind} experiments "
                             f"(reserved: {', '.join(RESERVED[kind])})")
