"""A small control plane written the way a user would, against gpufleet's published types: it
places pods, tables the devices' usage, runs an engine cycle and summarises a policy sweep.
tests/python/test_typing.py type-checks it (it must pass mypy as it is) and runs it."""
from __future__ import annotations

import pandas as pd

import gpufleet
from gpufleet import Allocation, Cluster, Pod
from gpufleet.cluster_results import DeviceUsage, PlaceResult
from gpufleet.engine import Engine
from gpufleet.engine_records import BindRecord
from gpufleet.sweep import summarize

NODES = [{"name": f"n{i}", "cpu": "32", "memory": "128Gi",
          "gpus": {"count": 2, "model": "V100", "memory": "16Gi"}} for i in range(2)]


def build_cluster() -> Cluster:
    cluster = Cluster()
    for spec in NODES:
        cluster.add_node(spec)
    return cluster


def admit(cluster: Cluster, pods: list[Pod]) -> dict[str, str]:
    """Each pod's node, or why it waits."""
    decisions: dict[str, str] = {}
    for pod in pods:
        result: PlaceResult = cluster.place(pod, "binpack")
        if result.allocation is None:
            decisions[pod.name] = f"pending: {result.reason}"
        else:
            decisions[pod.name] = result.allocation.node
    return decisions


def place_unpacked(cluster: Cluster, pod: Pod) -> Allocation | None:
    allocation, reason = cluster.place(pod)  # the tuple form keeps working
    if allocation is None:
        print(f"{pod.name}: {reason}")
    return allocation


def usage_frame(cluster: Cluster) -> pd.DataFrame:
    return pd.DataFrame(cluster.device_usage(copy=True))


def busy_gpus(cluster: Cluster) -> list[tuple[str, int]]:
    u: DeviceUsage = cluster.device_usage()
    return [(name, int(minor)) for name, minor, used, gpu
            in zip(u["node_name"], u["minor"], u["core_used"], u["is_gpu"]) if used > 0 and gpu]


def gpu_models(cluster: Cluster, node: str) -> list[str]:
    return [d["model"] for d in cluster.node(node)["devices"] if d["type"] == "gpu"]


def run_once(engine: Engine) -> list[BindRecord]:
    result = engine.run_cycle(now=0.0)
    for bind in result.native.binds:
        minors: list[int] = bind.gpus
        print(f"{bind.task} -> {bind.node} gpus {minors}")
    return result.to_dict()["binds"]


def mean_jct(trace: str) -> dict[str, float]:
    frame: pd.DataFrame = gpufleet.sweep([trace], ["fifo", "las"], seeds=[0], cluster="v100:8",
                                         workers=1, progress=False)
    summary = summarize(frame, ["avg_jct"])
    return {str(p): float(m) for p, m in zip(summary["policy"], summary["mean"])}


def main(trace: str) -> dict[str, object]:
    cluster = build_cluster()
    pods = [Pod(f"p{i}", {"nvidia.com/gpu": 1}) for i in range(5)]
    decisions = admit(cluster, pods)
    extra = place_unpacked(cluster, Pod("extra", {"nvidia.com/gpu": 1}))
    engine = Engine()
    for spec in NODES:
        engine.add_node(spec)
    engine.add_queue("research", weight=2)
    engine.submit({"name": "train", "queue": "research", "replicas": 2,
                   "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
    return {"decisions": decisions, "extra": extra, "usage": usage_frame(cluster),
            "busy": busy_gpus(cluster), "models": gpu_models(cluster, "n0"),
            "binds": run_once(engine), "jct": mean_jct(trace)}
