"""A trace run as DRA beside the device-plugin vocabularies: claims translated from the pods'
requests are placed through slices, and the two ways agree where the answer is forced."""
from __future__ import annotations

import pandas as pd

from gpufleet.dra.replay import compare_as_dra
from gpufleet.traces import synthetic_openb


def _nodes(counts: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"name": [f"n{i}" for i in range(len(counts))], "cpu_milli": 64000,
                         "memory_mib": 262144, "num_gpu": counts, "model": "V100"})


def _pods(rows: list[tuple[int, int]]) -> pd.DataFrame:
    return pd.DataFrame({"name": [f"p{i}" for i in range(len(rows))], "cpu_milli": 1000, "memory_mib": 1024,
                         "num_gpu": [n for n, _ in rows], "gpu_milli": [m for _, m in rows], "gpu_spec": None})


def test_whole_gpus_and_shares_agree_when_everything_fits() -> None:
    pods = _pods([(1, 1000)] * 5 + [(2, 1000)] * 2 + [(1, 500)] * 4)  # 9 + 2 GPUs on 12
    out = compare_as_dra(_nodes([4, 4, 4]), pods).set_index("way")
    assert out.loc["DRA", "pods placed"] == out.loc["device plugin", "pods placed"] == 11
    assert out.loc["DRA", "GPUs allocated"] == out.loc["device plugin", "GPUs allocated"] == 11.0


def test_shares_never_pass_a_gpu_and_a_full_cluster_refuses() -> None:
    pods = _pods([(1, 600)] * 6)  # only one 60% share fits per GPU
    out = compare_as_dra(_nodes([2, 2]), pods).set_index("way")
    assert out.loc["DRA", "pods placed"] == out.loc["device plugin", "pods placed"] == 4
    assert out.loc["DRA", "allocation ratio"] == 0.6


def test_a_synthetic_trace_runs_both_ways() -> None:
    nodes, pods = synthetic_openb(20, 150, seed=3)
    out = compare_as_dra(nodes, pods)
    assert list(out["way"]) == ["device plugin", "DRA"]
    assert (out["allocation ratio"] <= 1.0).all() and (out["pods placed"] > 0).all()
