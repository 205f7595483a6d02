"""Property test: random sequences of add node / place / release / snapshot / restore never
over-commit a device, and a restored state equals the state it was saved from."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet import Cluster, Pod

REQUESTS = st.sampled_from([
    {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}, {"koordinator.sh/gpu": "50"},
    {"koordinator.sh/gpu": "200"}, {"aliyun.com/gpu-mem": "3000"}, {"aliyun.com/gpu-mem": "9000"},
    {"koordinator.sh/gpu-core": "30", "koordinator.sh/gpu-memory": "5Gi"},
    {"koordinator.sh/gpu-core": "25", "koordinator.sh/gpu-memory-ratio": "40"},
    {"cpu": "4", "memory": "8Gi"},
])
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(1, 8), st.sampled_from(["16Gi", "80Gi"])),
    st.tuples(st.just("place"), REQUESTS, st.sampled_from(["binpack", "spread", "topology"])),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("health"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("roundtrip"),),
), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_random_operations_never_over_commit(ops):
    c = Cluster()
    placed: list[str] = []
    for k, op in enumerate(ops):
        if op[0] == "add":
            c.add_node({"name": f"n{c.num_nodes}", "cpu": "32", "memory": "128Gi",
                        "gpus": {"count": op[1], "memory": op[2]}})
        elif op[0] == "place":
            pod = Pod(f"p{k}", op[1])
            # The fast path of place() agrees with the per-device filter on every node.
            feasible = {n for n in c.node_names() if c.filter(pod, n).ok}
            allocation, _ = c.place(pod, op[2])
            assert (allocation is None) == (not feasible)
            if allocation is not None:
                assert allocation.node in feasible
            if allocation is not None:
                placed.append(allocation.pod)
        elif op[0] == "release" and placed:
            c.release(placed.pop(op[1] % len(placed)))
        elif op[0] == "health" and c.num_nodes:
            names = c.node_names()
            node = names[op[1] % len(names)]
            gpus = c.node(node)["devices"]
            if gpus:
                c.set_device_health(node, gpus[op[1] % len(gpus)]["minor"], op[2])
        elif op[0] == "roundtrip":
            saved = c.snapshot()
            c = Cluster.restore(saved)
            assert c.snapshot() == saved
        c.check_invariants()
        u = c.device_usage()
        assert (u["core_used"] <= u["core_capacity"]).all()
        assert (u["memory_used"] <= u["memory_capacity"]).all()
    restored = Cluster.restore(c.snapshot())
    assert restored == c
