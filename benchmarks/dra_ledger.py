"""DRA placement in one ledger with the device-plugin pods (benchmarks/README.md#dynamic-resource-allocation):
N nodes of 8 GPUs, both in a gpufleet.Cluster and published as ResourceSlices to a DraCluster that
shares it (``DraCluster(cluster=...)``), with pods asking through nvidia.com/gpu on every fourth
node (3 GPUs each); claims for 1, 2 and 8 GPUs with a CEL selector (benchmarks/dra_cluster.py's)
placed and committed one after the other, answers asked afresh (``remember=False``).

Three ways on the same nodes and claims, in the same run:
- one ledger: place() asks one node per class of nodes alike in what they publish and what the
  claims and the Cluster's pods leave on them;
- one ledger, every node: place(nodes=...), one search per node (what place() did with a Cluster
  attached before it classed nodes by their Cluster usage);
- detached: the same slices and claims in a DraCluster without a Cluster (the pods unseen).

    .venv/bin/python benchmarks/dra_ledger.py [--nodes 2000] [--claims 2000] [--baseline-claims 5]

With ``--openb DIR`` (../shared/data/openb), it replays instead the GPU pods of the openb trace's
default pod list on its GPU nodes as claims placed and committed by a detached DraCluster in
table order (the DRA side of ``gpufleet.dra.replay.compare_as_dra``: a few hundred groups of
alike nodes), and prints the time spent in place() and a digest of the nodes chosen (equal
digests: equal answers).
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import os
import time

import gpufleet
from dra_cluster import DRIVER, claims
from gpufleet.dra.cluster import DraCluster


def build(nodes: int, ledger: bool) -> DraCluster:
    cluster = gpufleet.Cluster() if ledger else None
    c = DraCluster(cluster=cluster)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for n in range(nodes):
        name = f"node-{n:05d}"
        if cluster is not None:
            cluster.add_node({"name": name, "cpu": "128", "memory": "1Ti",
                              "gpus": {"count": 8, "model": "H100", "memory": "80Gi"}})
            if n % 4 == 0:
                cluster.place(gpufleet.Pod.from_dict({"name": f"pod-{n}", "requests": {"nvidia.com/gpu": 3}}),
                              nodes=[name])
        c.add_node(name)
        c.apply({"kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"}, "spec": {
            "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {
                "model": {"string": "H100"}, "numa": {"int": i // 4}, "type": {"string": "gpu"},
                "minor": {"int": i}}, "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]}})
    return c


def run(c: DraCluster, names: list[str], **place_args) -> tuple[float, int]:
    start = time.perf_counter()
    placed = 0
    for name in names:
        node, _ = c.place([name], commit=True, remember=False, **place_args)
        placed += node is not None
    elapsed = time.perf_counter() - start
    for name in names:  # back to the same state for the next way
        c.release(name)
    return elapsed, placed


def openb(directory: str) -> None:
    from gpufleet.dra import replay
    from gpufleet.traces.openb import load_openb_nodes, load_openb_pods
    nodes = load_openb_nodes(os.path.join(directory, "openb_node_list_gpu_node.csv"))
    pods = load_openb_pods(os.path.join(directory, "openb_pod_list_default.csv"))
    dra = replay._gpu_cluster()
    for node in nodes.itertuples():
        replay._publish(dra, node.name, int(node.num_gpu), str(node.model or "gpu"))
    spent, chosen = 0.0, []
    for pod in pods.itertuples():
        requests = replay._requests(pod)
        if not requests:
            continue
        claim = replay._claim(pod.name, requests)
        dra.apply(claim)
        start = time.perf_counter()
        node, _ = dra.place([f"trace/{claim['metadata']['name']}"], commit=True)
        spent += time.perf_counter() - start
        chosen.append(node)
    placed = sum(n is not None for n in chosen)
    print(f"openb: {len(nodes)} nodes, {len(chosen)} claims, {placed} placed; place() {spent:.2f} s "
          f"({len(chosen) / spent:,.0f} claims/s); load average {os.getloadavg()[0]:.1f}; "
          f"nodes chosen {hashlib.sha1(repr(chosen).encode()).hexdigest()[:12]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--claims", type=int, default=2000)
    ap.add_argument("--baseline-claims", type=int, default=5)
    ap.add_argument("--openb", metavar="DIR", help="replay the openb trace's GPU pods instead")
    args = ap.parse_args()
    if args.openb:
        openb(args.openb)
        return
    t = time.perf_counter()
    one, detached = build(args.nodes, True), build(args.nodes, False)
    for c in (one, detached):
        c.place(claims(c, 1, "warm", 0))  # files every node (tables, groups)
    gc.freeze()
    print(f"{args.nodes} nodes x 8 GPUs, pods on every 4th node: built in {time.perf_counter() - t:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    every = sorted(f"node-{n:05d}" for n in range(args.nodes))
    rows = []
    # The per-node way between two runs of the new one: the machine's load is shared alike.
    for label, c, count, kwargs in (("one ledger", one, args.claims, {}),
                                    ("one ledger, every node (before)", one, args.baseline_claims, {"nodes": every}),
                                    ("one ledger (again)", one, args.claims, {}),
                                    ("detached", detached, args.claims, {})):
        names = claims(c, count, label.split()[0] + str(len(rows)), len(rows) + 1)
        elapsed, placed = run(c, names, **kwargs)
        rows.append((label, count, placed, elapsed, count / elapsed))
    print("| way | claims | placed | seconds | claims/s |")
    print("|---|---:|---:|---:|---:|")
    for label, count, placed, elapsed, rate in rows:
        print(f"| {label} | {count} | {placed} | {elapsed:.2f} | {rate:,.1f} |")


if __name__ == "__main__":
    main()
