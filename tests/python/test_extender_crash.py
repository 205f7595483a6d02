"""kill -9 in the middle of concurrent binds, then a restart with the same arguments: every bind
answered with success is held again, nothing is held twice, no device is over-committed.

Both modes run the real CLI (`python -m gpufleet extender`) as a child process on loopback:
`--state` (the journal beside the scenario file) and `--kube` (pod annotations on a fake API
server in this process, reached through a kubeconfig).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

import httpx
import pytest
import yaml

from test_extender import gpu, kpod

P = "/gpufleet"
NODES, GPUS, PER_GPU = 4, 4, 2          # 32 half-GPU slots
CAPACITY = NODES * GPUS * PER_GPU
THREADS = 6
KILL_AFTER = 14                         # successful binds before the SIGKILL
DEADLINE_S = 30.0
# A fresh interpreter importing the package and the server can take a while on a loaded
# machine; the wait ends as soon as /healthz answers, so a generous bound costs nothing.
STARTUP_S = 90.0
NODE_NAMES = [f"node-{i}" for i in range(NODES)]


def half_gpu_pod(name: str) -> dict[str, Any]:
    return kpod(name, {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Extender:
    """The CLI as a child process; `start()` waits for /healthz."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [sys.executable, "-m", "gpufleet", "extender", "--listen",
                    f"127.0.0.1:{self.port}", "--log-level", "warning", *args]
        self.env, self.log = env, log
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "Extender":
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        out.close()
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).text == "ok":
                    return self
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "extender did not come up"
            time.sleep(0.05)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=10) == -signal.SIGKILL

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def drive(url: str, names_by_thread: list[list[str]], ok: Optional[set[str]] = None
          ) -> tuple[set[str], set[str], list[str]]:
    """Filter+bind from several threads until the pods run out or the server dies. Returns the
    pods answered with success (also added to `ok` as they come), those whose bind got no
    answer, and protocol errors."""
    ok = set() if ok is None else ok
    unanswered: set[str] = set()
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + DEADLINE_S

    def loop(names: list[str]) -> None:
        with httpx.Client(base_url=url, timeout=10) as c:
            for name in names:
                if time.monotonic() > deadline:
                    return
                try:
                    out = c.post(f"{P}/filter", json={"Pod": half_gpu_pod(name),
                                                      "NodeNames": NODE_NAMES}).json()
                except httpx.TransportError:
                    return          # the server is gone; this pod was never bound
                if not out["NodeNames"]:
                    continue
                node = out["NodeNames"][hash(name) % len(out["NodeNames"])]
                try:
                    b = c.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                                  "PodUID": f"uid-{name}", "Node": node}).json()
                except httpx.TransportError:
                    with lock:
                        unanswered.add(f"default/{name}")
                    return
                with lock:
                    if b["Error"] == "":
                        ok.add(f"default/{name}")
                    elif "does not fit" not in b["Error"]:
                        errors.append(f"{name}: {b['Error']}")

    threads = [threading.Thread(target=loop, args=(n,)) for n in names_by_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE_S + 10)
    assert not any(t.is_alive() for t in threads)
    return ok, unanswered, errors


def held_pods(url: str) -> tuple[Counter, dict[str, Any]]:
    view = httpx.get(f"{url}/state", timeout=10).json()
    pods: Counter = Counter()
    for n in view["nodes"].values():
        pods.update(n["pods"])
        for d in n["devices"]:
            assert d["core_used"] <= d["core_total"] and d["memory_used"] <= d["memory_total"], d
    return pods, view


def crash_and_restart(ext: Extender, names: list[str], on_pod: Callable[[str], None]) -> None:
    for n in names:
        on_pod(n)
    per_thread = [names[i::THREADS] for i in range(THREADS)]
    ext.start()
    answered: set[str] = set()
    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(
        zip(("ok", "unanswered", "errors"), drive(ext.url, per_thread, answered))))
    runner.start()
    deadline = time.monotonic() + DEADLINE_S
    while len(answered) < KILL_AFTER and time.monotonic() < deadline:
        time.sleep(0.002)
    ext.kill9()
    runner.join(timeout=DEADLINE_S + 20)
    ok, unanswered, errors = result["ok"], result["unanswered"], result["errors"]
    assert errors == []
    assert KILL_AFTER <= len(ok) < CAPACITY, "the kill did not land mid-way"

    ext.start()   # same arguments
    pods, view = held_pods(ext.url)
    assert max(pods.values(), default=1) == 1, "a pod is held twice"
    held = set(pods)
    assert ok <= held, f"lost binds: {sorted(ok - held)}"
    # A bind cut off by the kill is either fully there or fully absent.
    assert held - ok <= unanswered, f"held but never bound: {sorted(held - ok - unanswered)}"
    assert view["allocations"] == len(held) and view["rebuild"]["refused"] == []
    # The restarted extender hands out exactly the rest: capacity is reached, never exceeded.
    # A pod that loses a race for the last room on its node is not retried by the driver, so
    # there are plenty more pods than free slots (the surplus finds every node full).
    rest = [f"after-{i}" for i in range(CAPACITY - len(held) + CAPACITY)]
    for n in rest:
        on_pod(n)
    ok2, _, errors2 = drive(ext.url, [rest[i::THREADS] for i in range(THREADS)])
    assert errors2 == [] and len(ok2) == CAPACITY - len(held)
    pods, view = held_pods(ext.url)
    assert len(pods) == CAPACITY and max(pods.values()) == 1
    assert all(d["core_used"] == 100 for n in view["nodes"].values() for d in n["devices"])


def test_sigkill_mid_binds_state_mode(tmp_path: Path):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"nodes": [
        {"name": n, "cpu": "64", "memory": "256Gi", "pods": 500,
         "devices": [gpu(g) for g in range(GPUS)]} for n in NODE_NAMES]}))
    ext = Extender(["--state", str(path)], dict(os.environ), tmp_path / "extender.log")
    try:
        crash_and_restart(ext, [f"p{i}" for i in range(CAPACITY + 8)], lambda name: None)
    finally:
        ext.stop()
    assert (tmp_path / "scenario.yaml.journal").exists()


def test_sigkill_mid_binds_kube_mode(tmp_path: Path):
    pytest.importorskip("kubernetes", reason="the k8s extra (official client) is not installed")
    from test_extender_kube import FakeKubeAPI, api_node

    api = FakeKubeAPI().start()
    for n in NODE_NAMES:
        api.put_node(api_node(n, gpus=GPUS))
    api.kubeconfig(tmp_path / "kubeconfig")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env["KUBECONFIG"] = str(tmp_path / "kubeconfig")
    ext = Extender(["--kube"], env, tmp_path / "extender.log")

    def create(name: str) -> None:
        api.put_pod(dict(half_gpu_pod(name), status={"phase": "Pending"}))

    try:
        crash_and_restart(ext, [f"p{i}" for i in range(CAPACITY + 8)], create)
        # The API server and the extender agree: every bound pod is held, and only those.
        pods, _ = held_pods(ext.url)
        with api.cond:
            bound = {k for k, p in api.objects["pods"].items() if p["spec"].get("nodeName")}
        assert bound == set(pods)
    finally:
        ext.stop()
        api.stop()
