"""Load benchmark for the kube-scheduler extender over real HTTP (uvicorn, loopback).

A server process holds a cluster of N nodes x G GPUs and serves the extender as the CLI does
(uvicorn, which picks httptools and uvloop when installed). One client process drives C
concurrent keep-alive connections; each runs scheduling cycles as kube-scheduler does with
`nodeCacheCapable: true`:

  filter      a new Pod and NodeNames = every node; the answer must pass them all
  prioritize  the same Pod and the nodes that passed; the client takes the highest score
  bind        the Pod to that node (in-memory binder: no Kubernetes API round trip)

and reports cycles/s, and p50/p99 per verb as seen by the client and by the server (the handler's
own time, body read to response, over its last 1,000 requests of each verb). Clients race: a
bind that finds its node already filled by another client's bind is refused ("does not fit") and
the pod goes through another cycle, as kube-scheduler retries it. At the end the server checks its
invariants and that exactly one allocation exists per pod bound. The filter
handler is also timed in-process, without HTTP, for its CPU cost alone.

    python benchmarks/extender_load.py --nodes 1000 --gpus 8 --clients 50 --pods 5000
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
P = "/gpufleet"
VERBS = ("filter", "prioritize", "bind")


def _api() -> Any:
    import gpufleet

    return gpufleet


def scenario(nodes: int, gpus: int) -> dict[str, Any]:
    def gpu(m: int) -> dict[str, Any]:
        return {"type": "gpu", "minor": m, "model": "A100", "health": True,
                "resources": {"koordinator.sh/gpu-core": "100",
                              "koordinator.sh/gpu-memory": "80Gi",
                              "koordinator.sh/gpu-memory-ratio": "100"},
                "topology": {"socketID": m // 4, "nodeID": m // 4, "pcieID": f"pci{m // 2}",
                             "busID": f"0000:{m:02x}:00.0"}}

    return {"nodes": [{"name": f"node-{i:04d}", "cpu": "128", "memory": "1Ti", "pods": 250,
                       "labels": {}, "taints": [], "devices": [gpu(m) for m in range(gpus)]}
                      for i in range(nodes)]}


def cycle_pod(i: int) -> dict[str, Any]:
    """Half a GPU (gpu-core 50, gpu-memory-ratio 50) and 2 CPUs: two fit on each GPU."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "bench", "uid": f"uid-p{i}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                "cpu": "2", "koordinator.sh/gpu-core": "50",
                "koordinator.sh/gpu-memory-ratio": "50"}}}]}}


# ---- server process ----------------------------------------------------------------------------
def serve(args: argparse.Namespace) -> None:
    if Path(args.server_python).resolve() != (ROOT / "python").resolve():
        # An editable install redirects `import gpufleet` to this checkout; drop that redirect
        # so the other tree is the one imported.
        sys.meta_path[:] = [f for f in sys.meta_path
                            if not type(f).__module__.startswith("_editable_")]
    sys.path.insert(0, args.server_python)
    from gpufleet.k8s.extender.server import BackgroundServer
    from gpufleet.k8s.extender.state import state_from_scenario

    st = state_from_scenario(scenario(args.nodes, args.gpus), api=_api(), strategy=args.strategy)
    with BackgroundServer(st, prefix=P, freeze=True) as srv:
        print(srv.url, flush=True)
        sys.stdin.read()   # until the parent closes our stdin
        st.cluster.check_invariants()
        print(json.dumps({"allocations": len(st.cluster.allocations())}), flush=True)


# ---- client process ----------------------------------------------------------------------------
async def _post(reader: Any, writer: Any, verb: str, body: bytes) -> tuple[int, bytes]:
    writer.write(b"POST %s/%s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (P.encode(), verb.encode(), len(body)) + body)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    return status, await reader.readexactly(length)


async def _connection(host: str, port: int, ids: list[int], names_json: bytes,
                      lat: dict[str, list[float]], tally: dict[str, int],
                      errors: list[str]) -> None:
    import orjson

    reader, writer = await asyncio.open_connection(host, port)
    rng = random.Random(ids[0] if ids else 0)
    try:
        for i in ids:
            pod = orjson.dumps(cycle_pod(i))
            for _ in range(50):   # a bind that lost a race to another client is scheduled again
                tally["cycles"] += 1
                t = time.perf_counter()
                status, out = await _post(reader, writer, "filter",
                                          b'{"Pod":%s,"NodeNames":%s}' % (pod, names_json))
                lat["filter"].append(time.perf_counter() - t)
                passed = orjson.loads(out).get("NodeNames") if status == 200 else None
                if not passed:
                    errors.append(f"filter p{i}: status {status}, {out[:200]!r}")
                    break
                t = time.perf_counter()
                status, out = await _post(reader, writer, "prioritize",
                                          b'{"Pod":%s,"NodeNames":%s}' % (pod, orjson.dumps(passed)))
                lat["prioritize"].append(time.perf_counter() - t)
                scores = orjson.loads(out) if status == 200 else None
                if not scores or len(scores) != len(passed):
                    errors.append(f"prioritize p{i}: status {status}, {out[:200]!r}")
                    break
                # kube-scheduler's selectHost: a random one of the highest-scoring nodes.
                top = max(h["Score"] for h in scores)
                best = rng.choice([h["Host"] for h in scores if h["Score"] == top])
                bind = orjson.dumps({"PodName": f"p{i}", "PodNamespace": "bench",
                                     "PodUID": f"uid-p{i}", "Node": best})
                t = time.perf_counter()
                status, out = await _post(reader, writer, "bind", bind)
                lat["bind"].append(time.perf_counter() - t)
                error = orjson.loads(out).get("Error") if status == 200 else out
                if not error:
                    tally["bound"] += 1
                    break
                if "does not fit" not in str(error):
                    errors.append(f"bind p{i} to {best}: {error!r:.200}")
                    break
                tally["conflicts"] += 1
    finally:
        writer.close()


def _client(url: str, pods: int, clients: int, n_nodes: int, q: Any) -> None:
    import orjson

    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    host, port = url.rsplit("//", 1)[1].rsplit(":", 1)
    names_json = orjson.dumps([f"node-{i:04d}" for i in range(n_nodes)])
    lat: dict[str, list[float]] = {v: [] for v in VERBS}
    tally = {"cycles": 0, "bound": 0, "conflicts": 0}
    errors: list[str] = []

    async def run() -> float:
        t0 = time.perf_counter()
        await asyncio.gather(*(_connection(host, int(port), list(range(c, pods, clients)),
                                           names_json, lat, tally, errors)
                               for c in range(clients)))
        return time.perf_counter() - t0

    wall = asyncio.run(run())
    q.put((lat, tally, errors, wall, time.process_time()))


def server_view(url: str) -> dict[str, Any]:
    """/state: the server's handler latency per verb (latest 1,000 requests) and its CPU time."""
    import httpx

    return httpx.get(f"{url}/state", timeout=60).json()


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return 1e3 * xs[max(0, int(len(xs) * q) - 1)] if xs else float("nan")


def drive(url: str, pods: int, clients: int, n_nodes: int) -> dict[str, Any]:
    q: Any = mp.Queue()
    proc = mp.Process(target=_client, args=(url, pods, clients, n_nodes, q))
    cpu0 = server_view(url)["process_cpu_s"]
    proc.start()
    lat, tally, errors, wall, client_cpu = q.get(timeout=1200)
    proc.join(timeout=60)
    view = server_view(url)
    done = tally["cycles"]
    return {"clients": clients, "cycles": done, "bound": tally["bound"],
            "conflicts": tally["conflicts"], "wall_s": wall, "cycles_per_s": done / wall,
            "errors": errors, "server_cpu_ms_per_cycle":
                1e3 * (view["process_cpu_s"] - cpu0) / max(1, done),
            "client_cpu_ms_per_cycle": 1e3 * client_cpu / max(1, done),
            "verbs": {v: {"p50_ms": _pct(lat[v], 0.5), "p99_ms": _pct(lat[v], 0.99),
                          "srv_p50_ms": view["latency"][v]["p50_ms"],
                          "srv_p99_ms": view["latency"][v]["p99_ms"],
                          "srv_max_ms": view["latency"][v]["max_ms"]} for v in VERBS}}


def in_process_filter(args: argparse.Namespace, n: int) -> dict[str, Any]:
    import orjson

    from gpufleet.k8s.extender.app import Extender
    from gpufleet.k8s.extender.server import freeze_gc
    from gpufleet.k8s.extender.state import state_from_scenario

    st = state_from_scenario(scenario(args.nodes, args.gpus), api=_api())
    ext = Extender(st)
    names = sorted(st.node_specs)
    freeze_gc()
    cpu = []
    for i in range(n):
        body = orjson.dumps({"Pod": cycle_pod(i), "NodeNames": names})
        c = time.thread_time()
        orjson.dumps(ext.filter(orjson.loads(body)))   # parse + handler + serialise, no HTTP
        cpu.append(time.thread_time() - c)
    return {"cpu_p50_ms": 1e3 * statistics.median(cpu), "cpu_p99_ms": _pct(cpu, 0.99)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pods", type=int, default=5000, help="pods to bind, one cycle or more each")
    ap.add_argument("--strategy", default="binpack")
    ap.add_argument("--server-python", default=str(ROOT / "python"),
                    help="serve the extender from this python/ directory (with a built _core), "
                         "to compare with another version of the handlers in the same run")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args)
        return 0
    assert args.pods <= 2 * args.nodes * args.gpus, "each pod takes half a GPU"
    env = dict(os.environ, PYTHONPATH=args.server_python)
    srv = subprocess.Popen([sys.executable, __file__, "--serve", "--nodes", str(args.nodes),
                            "--gpus", str(args.gpus), "--strategy", args.strategy,
                            "--server-python", args.server_python],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        url = srv.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError("server did not start")
        inproc = in_process_filter(args, 500)
        r = drive(url, args.pods, args.clients, args.nodes)
        srv.stdin.close()
        final = json.loads(srv.stdout.readline())
        if final["allocations"] != r["bound"]:
            r["errors"].append(f"{final['allocations']} allocations after {r['bound']} binds")
    finally:
        if srv.poll() is None:
            srv.stdin.close() if not srv.stdin.closed else None
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.kill()
    print(f"cluster: {args.nodes} nodes x {args.gpus} GPUs, strategy {args.strategy}, "
          f"{os.cpu_count()} CPUs; {args.clients} concurrent clients, {r['cycles']} cycles "
          f"(filter + prioritize + bind) in {r['wall_s']:.1f} s: "
          f"**{r['cycles_per_s']:.0f} cycles/s**; {r['bound']} pods bound, {r['conflicts']} "
          f"binds lost a race and were scheduled again; errors {len(r['errors'])}")
    print(f"server CPU {r['server_cpu_ms_per_cycle']:.2f} ms per cycle, client CPU "
          f"{r['client_cpu_ms_per_cycle']:.2f} ms per cycle; in-process filter (no HTTP) CPU "
          f"p50 {inproc['cpu_p50_ms']:.3f} ms, p99 {inproc['cpu_p99_ms']:.3f} ms")
    print("| verb | client p50 ms | client p99 ms | server p50 ms | server p99 ms | server max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for v in VERBS:
        x = r["verbs"][v]
        print(f"| {v} | {x['p50_ms']:.2f} | {x['p99_ms']:.2f} | {x['srv_p50_ms']:.3f} | "
              f"{x['srv_p99_ms']:.3f} | {x['srv_max_ms']:.2f} |")
    for e in r["errors"][:10]:
        print("error:", e)
    return 1 if r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
