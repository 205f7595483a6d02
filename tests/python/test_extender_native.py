"""The extender's one-call native verbs agree with the per-node calls they replace.

`gpufleet._core.extender.partition_nodes` must split nodes exactly as `Cluster.filter_nodes` codes
them, and `gpufleet._core.extender.host_priorities` must scale `score_nodes` to 0..max as the protocol's reference does
(rounding half to even), on clusters with partly used, full and constrained nodes.
"""
from __future__ import annotations

import random

import pytest

import gpufleet
from gpufleet._core import extender

from conftest import gpu_node

STRATEGIES = ["binpack", "spread", "topology"]


def scale(score: float, top: int = 10) -> int:
    # The reference: Python's round() is half-to-even, like C's nearbyint.
    if score != score:
        return 0
    return min(top, max(0, int(round(score * top / 100.0))))


def busy_cluster(seed: int) -> gpufleet.Cluster:
    rng = random.Random(seed)
    c = gpufleet.Cluster()
    for i in range(40):
        c.add_node(gpu_node(f"n{i:02d}", count=rng.choice([1, 2, 4, 8]),
                            memory=rng.choice(["16Gi", "32Gi"]),
                            labels={"zone": rng.choice(["a", "b"])}))
    for k in range(120):   # fill some of it, so scores and fits differ from node to node
        pod = gpufleet.Pod(f"ns/f{k}", {"cpu": "1", "nvidia.com/gpu": rng.choice(["1", "2"])})
        node = f"n{rng.randrange(40):02d}"
        if c.filter(pod, node).ok:
            c.reserve(pod, node)
    return c


def pods(rng: random.Random) -> list[gpufleet.Pod]:
    return [gpufleet.Pod("ns/a", {"cpu": "2", "nvidia.com/gpu": "1"}),
            gpufleet.Pod("ns/b", {"cpu": "1", "koordinator.sh/gpu-core": "50",
                                  "koordinator.sh/gpu-memory-ratio": "50"}),
            gpufleet.Pod("ns/c", {"cpu": "1", "nvidia.com/gpu": "8"}),
            gpufleet.Pod("ns/d", {"cpu": "1", "nvidia.com/gpu": "1"}, node_selector={"zone": "b"}),
            gpufleet.Pod("ns/e", {"cpu": "1", "aliyun.com/gpu-mem": str(rng.randint(1, 30))})]


@pytest.mark.parametrize("seed", range(4))
def test_partition_nodes_matches_filter_nodes(seed):
    rng = random.Random(seed)
    c = busy_cluster(seed)
    names = [f"n{i:02d}" for i in range(40)] + ["ghost", "n07"]   # an unknown and a repeat
    rng.shuffle(names)
    for pod in pods(rng):
        codes, reasons = c.filter_nodes(pod, names)
        passed, failed, unresolvable, unknown = extender.partition_nodes(c, pod, names)
        assert passed == [n for n, k in zip(names, codes.tolist()) if k == 0]
        assert failed == {n: r for n, k, r in zip(names, codes.tolist(), reasons) if k == 1}
        assert unresolvable == {n: r for n, k, r in zip(names, codes.tolist(), reasons) if k == 2}
        assert unknown == ["ghost"]
        assert all(r for r in list(failed.values()) + list(unresolvable.values()))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_host_priorities_are_scaled_scores(strategy):
    rng = random.Random(7)
    c = busy_cluster(7)
    names = [f"n{i:02d}" for i in range(40)] + ["ghost"]
    for pod in pods(rng):
        scores = c.score_nodes(pod, names, strategy).tolist()
        got = extender.host_priorities(c, pod, names, strategy, 10)
        assert got == [{"Host": n, "Score": scale(s)} for n, s in zip(names, scores)]
        top = extender.host_priorities(c, pod, names, strategy, max_priority=100)
        assert [h["Score"] for h in top] == [scale(s, 100) for s in scores]


def test_native_verbs_refuse_bad_names_without_touching_state():
    c = busy_cluster(1)
    before = c.snapshot()
    pod = gpufleet.Pod("ns/a", {"cpu": "1", "nvidia.com/gpu": "1"})
    with pytest.raises(TypeError, match=r"nodes\[1\]: expected a node name .*int"):
        extender.partition_nodes(c, pod, ["n00", 3])
    with pytest.raises(TypeError, match=r"nodes\[0\]: expected a node name .*NoneType"):
        extender.host_priorities(c, pod, [None])
    with pytest.raises(ValueError, match="max_priority: 0 is out of range: 1 to 2147483647"):
        extender.host_priorities(c, pod, ["n00"], "binpack", 0)
    assert c.snapshot() == before
    assert extender.partition_nodes(c, pod, []) == ([], {}, {}, [])
    assert extender.host_priorities(c, pod, []) == []
