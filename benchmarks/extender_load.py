"""Load benchmark for the kube-scheduler extender over real HTTP (uvicorn, loopback).

A server process holds a cluster of N nodes x G GPUs and serves the extender; client processes
(so the client's own Python does not share the server's GIL) send
  1. filter requests in nodeCacheCapable mode (NodeNames = every node), and
  2. bind requests (one whole GPU per pod, pods known from the scenario's pending list),
and report requests/s and p50/p99/max latency as seen by the client. It also times the filter
handler in-process, without HTTP, to separate the core + JSON cost from the transport.

    python benchmarks/extender_load.py --nodes 1000 --gpus 8 --clients 2 --filters 2000 --binds 4000
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
P = "/gpufleet"


def _api() -> Any:
    import gpufleet

    return gpufleet


def scenario(nodes: int, gpus: int, pods: int) -> dict[str, Any]:
    def gpu(m: int) -> dict[str, Any]:
        return {"type": "gpu", "minor": m, "model": "A100", "health": True,
                "resources": {"koordinator.sh/gpu-core": "100",
                              "koordinator.sh/gpu-memory": "80Gi",
                              "koordinator.sh/gpu-memory-ratio": "100"},
                "topology": {"socketID": m // 4, "nodeID": m // 4, "pcieID": f"pci{m // 2}",
                             "busID": f"0000:{m:02x}:00.0"}}

    return {"nodes": [{"name": f"node-{i:04d}", "cpu": "128", "memory": "1Ti", "pods": 250,
                       "labels": {}, "taints": [], "devices": [gpu(m) for m in range(gpus)]}
                      for i in range(nodes)],
            "pods": [{"name": f"bench/b{i}", "uid": f"uid-b{i}",
                      "requests": {"cpu": "1", "nvidia.com/gpu": "1"}} for i in range(pods)]}


def filter_pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"f{i}", "namespace": "bench", "uid": f"uid-f{i}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                "cpu": "2", "koordinator.sh/gpu-core": "50",
                "koordinator.sh/gpu-memory-ratio": "50"}}}]}}


# ---- server process ----------------------------------------------------------------------------
def serve(args: argparse.Namespace) -> None:
    from gpufleet.k8s.extender.server import BackgroundServer
    from gpufleet.k8s.extender.state import state_from_scenario

    st = state_from_scenario(scenario(args.nodes, args.gpus, args.binds), api=_api(),
                             strategy=args.strategy)
    with BackgroundServer(st, prefix=P, freeze=True) as srv:
        print(srv.url, flush=True)
        sys.stdin.read()   # until the parent closes our stdin
        st.cluster.check_invariants()
        print(json.dumps({"allocations": len(st.cluster.allocations())}), flush=True)


# ---- client processes --------------------------------------------------------------------------
def _client(url: str, verb: str, ids: list[int], node_names: list[str], q: Any) -> None:
    import httpx

    lat, bad = [], 0
    with httpx.Client(base_url=url, timeout=30.0) as c:
        for i in ids:
            if verb == "filter":
                body = {"Pod": filter_pod(i), "NodeNames": node_names}
            else:
                body = {"PodName": f"b{i}", "PodNamespace": "bench", "PodUID": f"uid-b{i}",
                        "Node": node_names[i % len(node_names)]}
            t = time.perf_counter()
            r = c.post(f"{P}/{verb}", json=body)
            lat.append(time.perf_counter() - t)
            out = r.json()
            if r.status_code != 200 or out.get("Error") or (
                    verb == "filter" and len(out["NodeNames"]) != len(node_names)):
                bad += 1
    q.put((lat, bad))


def server_view(url: str) -> dict[str, Any]:
    """/state: the server's handler latency per verb (latest 1,000 requests) and its CPU time."""
    import httpx

    return httpx.get(f"{url}/state", timeout=60).json()


def drive(url: str, verb: str, n: int, clients: int, node_names: list[str]) -> dict[str, Any]:
    q: Any = mp.Queue()
    procs = [mp.Process(target=_client, args=(url, verb, list(range(c, n, clients)), node_names, q))
             for c in range(clients)]
    cpu0 = server_view(url)["process_cpu_s"]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    parts = [q.get(timeout=600) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join(timeout=60)
    lat = sorted(x for part, _ in parts for x in part)
    view = server_view(url)
    srv = view["latency"][verb]
    return {"verb": verb, "clients": clients, "requests": len(lat),
            "srv_p50_ms": srv["p50_ms"], "srv_p99_ms": srv["p99_ms"],
            "srv_cpu_ms": 1e3 * (view["process_cpu_s"] - cpu0) / len(lat),
            "errors": sum(b for _, b in parts), "req_per_s": len(lat) / wall,
            "p50_ms": 1e3 * lat[len(lat) // 2], "p99_ms": 1e3 * lat[int(len(lat) * 0.99) - 1],
            "max_ms": 1e3 * lat[-1]}


def in_process_filter(args: argparse.Namespace, n: int) -> dict[str, Any]:
    from gpufleet.k8s.extender.app import Extender
    from gpufleet.k8s.extender.state import state_from_scenario

    st = state_from_scenario(scenario(args.nodes, args.gpus, 0), api=_api())
    ext = Extender(st)
    names = sorted(st.node_specs)
    from gpufleet.k8s.extender.server import freeze_gc

    freeze_gc()
    lat, cpu = [], []
    for i in range(n):
        body = json.dumps({"Pod": filter_pod(i), "NodeNames": names})
        t, c = time.perf_counter(), time.thread_time()
        json.dumps(ext.filter(json.loads(body)))   # parse + handler + serialise, no HTTP
        cpu.append(time.thread_time() - c)
        lat.append(time.perf_counter() - t)
    lat.sort()
    cpu.sort()
    # CPU time is what a request costs whatever else the machine runs; wall time includes waits.
    return {"verb": "filter (in-process, no HTTP)", "clients": 1, "requests": n, "errors": 0,
            "req_per_s": n / sum(lat), "p50_ms": 1e3 * statistics.median(lat),
            "p99_ms": 1e3 * lat[int(n * 0.99) - 1], "max_ms": 1e3 * lat[-1],
            "cpu_p50_ms": 1e3 * statistics.median(cpu), "cpu_p99_ms": 1e3 * cpu[int(n * 0.99) - 1],
            "srv_cpu_ms": 1e3 * sum(cpu) / n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--filters", type=int, default=2000)
    ap.add_argument("--binds", type=int, default=4000)
    ap.add_argument("--strategy", default="binpack")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args)
        return 0
    assert args.binds <= args.nodes * args.gpus, "each bench pod takes a whole GPU"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    srv = subprocess.Popen([sys.executable, __file__, "--serve", "--nodes", str(args.nodes),
                            "--gpus", str(args.gpus), "--binds", str(args.binds),
                            "--strategy", args.strategy],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    rows = []
    try:
        url = srv.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError("server did not start")
        names = [f"node-{i:04d}" for i in range(args.nodes)]
        rows.append(in_process_filter(args, min(args.filters, 500)))
        for clients in (1, args.clients):
            rows.append(drive(url, "filter", args.filters, clients, names))
        rows.append(drive(url, "bind", args.binds, args.clients, names))
        srv.stdin.close()
        final = json.loads(srv.stdout.readline())
        assert final["allocations"] == args.binds, final
    finally:
        if srv.poll() is None:
            srv.stdin.close() if not srv.stdin.closed else None
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.kill()
    print(f"cluster: {args.nodes} nodes x {args.gpus} GPUs, strategy {args.strategy}, "
          f"{os.cpu_count()} CPUs; latency seen by the client")
    print("srv p50/p99: the server's handler time (body read, JSON, core calls, response) over "
          "its last 1,000 requests of the phase; srv cpu: server process CPU ms per request "
          "(uvicorn included)")
    print(f"{'verb':30} {'clients':>7} {'requests':>8} {'errors':>6} {'req/s':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'srv p50':>7} {'srv p99':>7} {'srv cpu':>7}")
    for r in rows:
        print(f"{r['verb']:30} {r['clients']:7d} {r['requests']:8d} {r['errors']:6d} "
              f"{r['req_per_s']:7.0f} {r['p50_ms']:7.2f} {r['p99_ms']:7.2f} {r['max_ms']:7.2f} "
              f"{r.get('srv_p50_ms', r['p50_ms']):7.2f} {r.get('srv_p99_ms', r['p99_ms']):7.2f} "
              f"{r['srv_cpu_ms']:7.2f}")
        if "cpu_p50_ms" in r:
            print(f"{'  (its CPU time per request)':30} {'':7} {'':8} {'':6} {'':7} "
                  f"{r['cpu_p50_ms']:7.2f} {r['cpu_p99_ms']:7.2f}")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
