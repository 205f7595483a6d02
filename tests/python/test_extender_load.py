"""The real uvicorn server under concurrent filter+bind: every answer right, nothing over-committed.

8 clients race 400 identical pods for 128 GPU slots (4 nodes x 8 GPUs x 4 quarter-GPU pods), so
binds do collide; the extender must hand out exactly the 128 slots and no more.
"""
from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter

import httpx

import gpufleet

API = gpufleet

from gpufleet.k8s.extender.binder import MemoryBinder  # noqa: E402
from gpufleet.k8s.extender.server import BackgroundServer  # noqa: E402
from gpufleet.k8s.extender.state import ANN_DEVICE_ALLOCATED, state_from_scenario  # noqa: E402
from test_extender import gpu, kpod  # noqa: E402

THREADS, PODS_PER_THREAD, ATTEMPTS = 8, 50, 6
# A fresh interpreter importing the package and the server can take a while on a loaded
# machine; the wait ends as soon as /healthz answers, so a generous bound costs nothing.
STARTUP_S = 90.0
NODES, GPUS, PER_GPU = 4, 8, 4
DEADLINE_S = 30.0
P = "/gpufleet"


class SlowBinder(MemoryBinder):
    """Runs in a worker thread and takes a moment, as the API server would, so other requests
    interleave between a bind's reserve and its commit."""
    blocking = True

    def bind(self, *args, **kwargs) -> None:
        time.sleep(0.001)
        super().bind(*args, **kwargs)


def _pod(name: str) -> dict:
    return kpod(name, {"cpu": "100m", "koordinator.sh/gpu-core": "25",
                       "koordinator.sh/gpu-memory-ratio": "25"})


def _client_loop(url: str, tid: int, names: list[str], results: dict, errors: list,
                 deadline: float) -> None:
    rng = random.Random(tid)
    with httpx.Client(base_url=url, timeout=10.0) as c:
        for i in range(PODS_PER_THREAD):
            name = f"t{tid}-p{i}"
            outcome = "unplaced"
            for _ in range(ATTEMPTS):
                if time.monotonic() > deadline:
                    errors.append(f"{name}: deadline")
                    return
                r = c.post(f"{P}/filter", json={"Pod": _pod(name), "NodeNames": names})
                out = r.json()
                every = set(out["NodeNames"]) | set(out["FailedNodes"]) | \
                    set(out["FailedAndUnresolvableNodes"])
                if r.status_code != 200 or out["Error"] or every != set(names):
                    errors.append(f"{name}: bad filter answer {out}")
                    return
                if not out["NodeNames"]:
                    break   # the cluster is full for this pod: a right answer
                target = rng.choice(out["NodeNames"])
                b = c.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                              "PodUID": f"uid-{name}", "Node": target}).json()
                if b["Error"] == "":
                    outcome = target
                    break
                if "does not fit" not in b["Error"]:   # only a lost race may fail a bind
                    errors.append(f"{name}: bad bind answer {b}")
                    return
            results[name] = outcome


def test_concurrent_filter_and_bind_never_over_commits():
    names = [f"node-{i}" for i in range(NODES)]
    nodes = [{"name": n, "cpu": "64", "memory": "256Gi", "pods": 500, "labels": {}, "taints": [],
              "devices": [gpu(g) for g in range(GPUS)]} for n in names]
    binder = SlowBinder()
    st = state_from_scenario({"nodes": nodes}, api=API, binder=binder)
    results: dict[str, str] = {}
    errors: list[str] = []
    t0 = time.monotonic()
    with BackgroundServer(st, prefix=P) as srv:
        threads = [threading.Thread(target=_client_loop,
                                    args=(srv.url, t, names, results, errors, t0 + DEADLINE_S))
                   for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=DEADLINE_S + 5)
        assert not any(t.is_alive() for t in threads)
        state_view = httpx.get(f"{srv.url}/state", timeout=10).json()
    assert time.monotonic() - t0 < DEADLINE_S
    print("requests:", state_view["requests"])
    assert errors == []
    assert len(results) == THREADS * PODS_PER_THREAD
    placed = {p: n for p, n in results.items() if n != "unplaced"}
    capacity = NODES * GPUS * PER_GPU
    assert len(placed) == capacity
    # The state, the binder's records and the /state view agree, and no device holds too much.
    st.cluster.check_invariants()
    allocs = {a.pod: a for a in st.cluster.allocations()}
    assert set(allocs) == {f"default/{p}" for p in placed} == set(binder.records)
    slots: Counter = Counter()
    for p, n in placed.items():
        a, rec = allocs[f"default/{p}"], binder.records[f"default/{p}"]
        assert a.state == "Bound" and a.node == n == rec.node
        minors = [g["minor"] for g in json.loads(rec.annotations[ANN_DEVICE_ALLOCATED])["gpu"]]
        assert minors == [g.minor for g in a.devices] and len(minors) == 1
        slots[(n, minors[0])] += 1
    assert set(slots.values()) == {PER_GPU} and len(slots) == NODES * GPUS
    for n in names:
        for d in state_view["nodes"][n]["devices"]:
            assert d["core_used"] == 100 and d["memory_used"] <= d["memory_total"]


def test_cli_serves_a_scenario_over_http(tmp_path):
    """`gpufleet extender --state ...` as a real process: healthz, a filter, a bind, then exit."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    import yaml

    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"nodes": [{"name": "n1", "cpu": "8", "memory": "32Gi",
                                               "devices": [gpu(0), gpu(1)]}]}))
    with socket.socket() as s:   # a free loopback port for the child to take
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "gpufleet", "extender", "--listen",
                             f"127.0.0.1:{port}", "--state", str(path), "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).text == "ok":
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.1)
        pod = kpod("p", {"nvidia.com/gpu": "2"})
        out = httpx.post(f"{url}{P}/filter", json={"Pod": pod, "NodeNames": ["n1", "x"]}).json()
        assert out["NodeNames"] == ["n1"] and out["FailedNodes"] == {"x": "node unknown to gpufleet"}
        out = httpx.post(f"{url}{P}/bind", json={"PodName": "p", "PodNamespace": "default",
                                                 "PodUID": "uid-p", "Node": "n1"}).json()
        assert out == {"Error": ""}
        view = httpx.get(f"{url}/state").json()
        assert [d["core_used"] for d in view["nodes"]["n1"]["devices"]] == [100, 100]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            # uvicorn shuts down cleanly, then re-raises the signal it caught (as Ctrl-C would).
            assert proc.wait(timeout=15) in (0, -signal.SIGINT)
        finally:
            if proc.poll() is None:
                proc.kill()
