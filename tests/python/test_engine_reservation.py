"""The starvation policy from Python: capacity held for the reservation target is reported per node
(CycleResult.held), per queue (held_* columns) and as the target's name, and is released when the
target starts."""
from __future__ import annotations

from pathlib import Path

from gpufleet.engine import Engine

import conftest

ROOT = Path(__file__).resolve().parents[2]


def _node(name: str, gpus: int = 8) -> dict:
    return conftest.gpu_node(name, gpus, memory="80Gi", model="A100", cpu="128", ram="1024Gi")


def _job(name: str, replicas: int, gpus: int, creation: int) -> dict:
    return conftest.job(name, replicas, gpus, creation=creation)


def test_two_node_stream_holds_for_the_gang_and_starts_it():
    eng = Engine(str(ROOT / "examples" / "scheduler-conf.yaml"))
    for n in ("n0", "n1"):
        eng.add_node(_node(n))
    started: dict[str, int] = {}
    runs: dict[str, int] = {}
    nxt = 0

    def small() -> None:
        nonlocal nxt
        k = nxt
        nxt += 1
        eng.submit(_job(f"small{k}", 1, 1, 1 + k if k < 6 else 10 + k))
        runs[f"small{k}"] = 1 + k % 2

    for _ in range(6):
        small()
    eng.submit(_job("gang", 2, 8, 8))
    gang_at, held_seen = None, []
    for c in range(14):
        for name, at in list(started.items()):
            if c - at >= runs[name]:
                eng.delete(name)
                del started[name]
        for _ in range(3):
            small()
        r = eng.run_cycle()
        for job in set(r.binds["job"]):
            if job == "gang":
                gang_at = c
            else:
                started.setdefault(job, c)
        if gang_at is not None:
            assert r.held.empty and r.held_gpus == 0.0
            break
        if r.target == "gang":
            assert "reservation target" in r.pending["gang"]
            assert list(r.held.columns) == ["node", "job", "cpu", "memory", "gpu"]
            assert set(r.held["job"]) <= {"gang"}
            assert r.held_gpus <= 16
            default = r.queues.set_index("queue").loc["default"]
            assert default["held_gpu"] == r.held_gpus
            held_seen.append(r.held_gpus)
        else:
            assert r.held.empty
    assert gang_at is not None, "the gang must start under the starvation policy"
    assert held_seen and max(held_seen) > 0
    assert r.to_dict()["target"] == "gang"
