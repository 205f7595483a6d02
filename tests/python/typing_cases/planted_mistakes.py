"""Mistakes a type checker must catch in code using gpufleet: each line marked `# mistake[CODE]`
must draw a mypy error with that code, and no other line may (tests/python/test_typing.py)."""
from __future__ import annotations

import gpufleet
from gpufleet import Cluster, Pod
from gpufleet.engine import Engine
from gpufleet.sweep import summarize


def where(cluster: Cluster, pod: Pod) -> str:
    result = cluster.place(pod)
    if result.placed:  # mistake[attr-defined]
        return result.reason
    return result.allocation.node  # mistake[union-attr]


def old_usage_key(cluster: Cluster) -> list[str]:
    return cluster.device_usage()["node_names"]  # mistake[typeddict-item]


def node_gpus(cluster: Cluster) -> int:
    return cluster.node("n0")["gpus"]  # mistake[typeddict-item]


def first_bind_node(engine: Engine) -> str:
    binds = engine.run_cycle().to_dict()["binds"]
    return binds[0]["nodes"]  # mistake[typeddict-item]


def bind_gpu_count(engine: Engine) -> int:
    return engine.run_cycle().native.binds[0].gpu_count  # mistake[attr-defined]


def summary(trace: str) -> float:
    frame = gpufleet.sweep([trace], ["fifo"], progress=False)
    table = summarize(frame["value"])  # mistake[arg-type]
    return float(table["mean"].iloc[0])
