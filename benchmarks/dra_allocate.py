"""DRA allocation timings (benchmarks/README.md#dynamic-resource-allocation).

1. The impossible claim that makes Kubernetes' allocator search exponentially: one claim, two
   ExactCount requests whose counts add up to one more than the n identical devices of a node.
   gpufleet refuses it by counting; the figures are the native decision (the problem already
   built), a DraCluster question (the node's table kept: what a scheduler asks per pod), and
   the whole ``allocate`` call (objects checked, the node's table built, problem built).
2. The same claim with counts that fit (a feasible twin), as the baseline in the same run.

    .venv/bin/python benchmarks/dra_allocate.py [--repeat 200]
"""
from __future__ import annotations

import argparse
import time

from gpufleet import _core
from gpufleet.dra import allocate
from gpufleet.dra.cluster import DraCluster
from gpufleet.dra.problem import DeviceMatcher, Ledger, build, features_from

DRIVER = "gpu.example.com"
CLASS = {"metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def scenario(n: int, first: int, second: int) -> tuple[dict, list, list]:
    node = {"metadata": {"name": "n1", "labels": {}}}
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100"}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(n)]
    slices = [{"metadata": {"name": "s"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": devices}}]
    claim = {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [
        {"name": "a", "exactly": {"deviceClassName": "gpu", "count": first}},
        {"name": "b", "exactly": {"deviceClassName": "gpu", "count": second}}]}}}
    return node, [claim], slices


def per_call(fn, repeat: int) -> float:
    fn()  # warm (CEL compiled, caches filled)
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    print("| devices | counts | verdict | native steps | native | DraCluster.allocate | allocate() "
          "| feasible twin: DraCluster.allocate |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for n in (10, 11, 16, 24):
        a, b = (n + 1) // 2, n + 1 - (n + 1) // 2
        node, claims, slices = scenario(n, a, b)
        built = build(node, claims, {"gpu": CLASS}, slices, Ledger(), features_from(None), DeviceMatcher())
        answer = _core.dra_solve(built.problem)
        native = per_call(lambda: _core.dra_solve(built.problem), args.repeat)
        whole = per_call(lambda: allocate(node, claims, [CLASS], slices), args.repeat)
        out = allocate(node, claims, [CLASS], slices)
        cluster = kept(node, claims, slices)
        cached = per_call(lambda: cluster.allocate(["default/c"], "n1"), args.repeat)
        fnode, fclaims, fslices = scenario(n, a, n - a)
        fcluster = kept(fnode, fclaims, fslices)
        feasible = per_call(lambda: fcluster.allocate(["default/c"], "n1"), args.repeat)
        assert out.verdict == "unallocatable" and fcluster.allocate(["default/c"], "n1").ok
        print(f"| {n} | {a}+{b} | {out.verdict} | {answer['steps']} | {native * 1e6:.0f} µs "
              f"| {cached * 1e3:.3f} ms | {whole * 1e3:.2f} ms | {feasible * 1e3:.3f} ms |")


def kept(node: dict, claims: list, slices: list) -> DraCluster:
    cluster = DraCluster()
    cluster.add_node(node)
    cluster.apply({**CLASS, "kind": "DeviceClass"})
    for s in slices:
        cluster.apply({**s, "kind": "ResourceSlice"})
    for c in claims:
        cluster.apply({**c, "kind": "ResourceClaim"})
    return cluster


if __name__ == "__main__":
    main()
