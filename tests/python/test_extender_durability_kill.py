"""SIGKILL of the real CLI between every two steps of a bind's journal write (before the write,
half of it written, written but not fsynced, fsynced but not marked, marked but not answered) and
of the start's compaction, at exact points (faults.py's test-only GPUFLEET_EXTENDER_FAULT), then
a restart: every bind answered with success is held, the bind cut off is either fully there or
fully absent, and the scheduler's retry of it (a plain bind, or filter then bind) is answered
with success, holding its devices once."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import yaml

from gpufleet.k8s.extender.faults import ENV
from test_extender import gpu, kpod
from test_extender_crash import STARTUP_S, Extender

P = "/gpufleet"
# point -> (the bind cut off there is held after the restart, how the scheduler retries it)
STEPS = {"append": (False, "filter"), "append-torn": (False, "filter"),
         "appended": (True, "plain"), "synced": (True, "filter"), "marked": (True, "plain")}


def one_gpu_pod(name: str) -> dict[str, Any]:
    return kpod(name, {"nvidia.com/gpu": "1"})


def bind(c: httpx.Client, name: str, node: str) -> dict[str, Any]:
    return c.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                     "PodUID": f"uid-{name}", "Node": node}).json()


def filter_then_bind(c: httpx.Client, name: str, node: str) -> dict[str, Any]:
    out = c.post(f"{P}/filter", json={"Pod": one_gpu_pod(name), "NodeNames": [node]}).json()
    assert out["NodeNames"] == [node], out      # the pod's own devices do not fill its node
    return bind(c, name, node)


def view(ext: Extender) -> tuple[dict[str, str], dict[str, Any]]:
    state = httpx.get(f"{ext.url}/state", timeout=10).json()
    held = {}
    for name, n in state["nodes"].items():
        for d in n["devices"]:
            assert d["core_used"] <= d["core_total"], d
        for p in n["pods"]:
            assert p not in held, f"{p} held twice"
            held[p] = name
    return held, state


def check_and_retry(ext: Extender, point: str, answered: dict[str, str], log_text: str) -> None:
    """After the kill at `point`: what is held, then the scheduler's retry of the cut-off bind."""
    held_after, retry = STEPS[point]
    node, victim = f"n-{point}", f"default/{point}-b"
    held, state = view(ext)
    assert {p: held.get(p) for p in answered} == answered, f"lost after a kill at {point}"
    assert (victim in held) == held_after, (point, held)
    assert state["journal"]["unanswered"] == (point in ("appended", "synced"))
    assert state["rebuild"]["refused"] == []
    if point == "append-torn":
        assert "dropped: it was never answered" in log_text
    with httpx.Client(base_url=ext.url, timeout=10) as c:
        if not held_after:   # never journalled: a bind without a filter first is unknown
            assert "is unknown" in bind(c, f"{point}-b", node)["Error"]
        retried = bind(c, f"{point}-b", node) if retry == "plain" else \
            filter_then_bind(c, f"{point}-b", node)
        assert retried == {"Error": ""}, (point, retried)
    answered[victim] = node
    held, state = view(ext)
    assert {p: held.get(p) for p in answered} == answered
    assert all(d["core_used"] == 100 for d in state["nodes"][node]["devices"])
    assert state["journal"]["unanswered"] == 0


def test_sigkill_between_the_steps_of_a_bind_loses_no_answered_bind(tmp_path: Path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"nodes": [
        {"name": f"n-{p}", "cpu": "64", "memory": "256Gi", "devices": [gpu(0), gpu(1)]}
        for p in STEPS]}))
    log = tmp_path / "extender.log"
    env = {k: v for k, v in os.environ.items() if k != ENV}
    answered: dict[str, str] = {}
    # Each process first checks the kill of the one before, then binds two pods and is killed at
    # the next point during the second. A point is reached once per journal append: the retry
    # before appends once, except after "marked" (that bind is answered from the state).
    previous = None
    for point in [*STEPS, None]:
        retry_appends = 0 if previous in (None, "marked") else 1
        fault = {ENV: f"{point}@{retry_appends + 2}"} if point else {}
        offset = log.stat().st_size if log.exists() else 0
        ext = Extender(["--state", str(scenario)], dict(env, **fault), log).start()
        try:
            if previous is not None:
                check_and_retry(ext, previous, answered, log.read_text()[offset:])
            if point is not None:
                node = f"n-{point}"
                with httpx.Client(base_url=ext.url, timeout=10) as c:
                    assert filter_then_bind(c, f"{point}-a", node) == {"Error": ""}
                    answered[f"default/{point}-a"] = node
                    try:
                        out = filter_then_bind(c, f"{point}-b", node)
                        raise AssertionError(f"the bind at {point} was answered: {out}")
                    except httpx.TransportError:
                        pass
                assert ext.proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            ext.stop()
        previous = point
    assert len(answered) == 2 * len(STEPS)

    # Killed during the start's compaction: before the rename, then after it (before the
    # directory's fsync). The journal the next start reads holds every answered bind.
    for point in ("compact-written", "compact-renamed"):
        proc = subprocess.Popen([*Extender([], env, log).cmd[:4], "--listen", "127.0.0.1:0",
                                 "--state", str(scenario)], env=dict(env, **{ENV: point}),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.wait(timeout=STARTUP_S) == -signal.SIGKILL, point
    ext = Extender(["--state", str(scenario)], env, log).start()
    try:
        held, state = view(ext)
        assert held == answered
        assert state["journal"]["unanswered"] == 0 and state["journal"]["lost_at_start"] == []
    finally:
        ext.stop()

    # The journal cut short by hand: the CLI refuses to start and names the way out; told to
    # accept the loss it starts without the bind that was cut.
    journal = Path(f"{scenario}.journal")
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    r = subprocess.run([*Extender([], env, log).cmd[:4], "--listen", "127.0.0.1:0",
                        "--state", str(scenario)], env=env, capture_output=True, text=True,
                       timeout=STARTUP_S)
    assert r.returncode == 2 and "--accept-journal-loss" in r.stderr, r.stderr
    assert "the file ends after 9 of the 10 compacted records" in r.stderr
    ext = Extender(["--state", str(scenario), "--accept-journal-loss"], env, log).start()
    try:
        held, state = view(ext)
        assert len(held) == 9 and held.items() <= answered.items()
        assert state["journal"]["lost_at_start"]
    finally:
        ext.stop()
