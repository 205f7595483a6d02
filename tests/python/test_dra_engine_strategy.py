"""The engine's claims pick their devices by the strategy the user chose (gpufleet.dra.engine):
`first` as Kubernetes' allocator does, `pack` onto GPUs already open; another name is refused
and leaves the engine's claims as they were. The node is examples/dra/mig-partitions.yaml: two
GPUs of seven 1g partitions each, one partition of gpu-0 held by an earlier claim, and six
claims of a 1g partition (gpu-1's partitions are visited first)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gpufleet import _core
from gpufleet.dra import DraCluster
from gpufleet.dra.engine import claim_results, set_claims
from gpufleet.dra.scenario import load_dra_scenario
from gpufleet.engine import Engine

SCENARIO = load_dra_scenario(Path(__file__).parents[2] / "examples/dra/mig-partitions.yaml")
NODE = SCENARIO.node["metadata"]["name"]
CLAIMS = [f"default/{c['metadata']['name']}" for c in SCENARIO.claims]


def _dra(strategy: str = "pack") -> DraCluster:
    return DraCluster.restore({"nodes": [SCENARIO.node], "slices": SCENARIO.slices, "classes": SCENARIO.classes,
                               "claims": SCENARIO.allocated + SCENARIO.claims}, strategy=strategy)


def _engine(replicas: int) -> Engine:
    eng = Engine()
    eng.add_queue("q", weight=1)
    eng.add_node({"name": NODE, "cpu": "64", "memory": "512Gi",
                  "gpus": {"count": 2, "model": "A100", "memory": "80Gi"}})
    eng.submit({"name": "job", "queue": "q", "replicas": replicas, "requests": {"cpu": "1"}})
    return eng


def _devices(eng: Engine, dra: DraCluster, tasks: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each placed task's devices, read from what its claims hold."""
    out = {}
    for task, (node, by_claim) in claim_results(eng, dra, tasks).items():
        assert node == NODE
        out[task] = sorted(r["device"] for a in by_claim.values() for r in a["devices"]["results"])
    return out


def _order(eng: Engine) -> list[str]:
    return [b["task"] for b in eng.run_cycle(now=1).binds.to_dict("records")]


def test_first_picks_the_devices_that_kubernetes_allocator_picks_on_the_same_node_state() -> None:
    tasks = {f"job-{i}": [claim] for i, claim in enumerate(CLAIMS)}
    dra, eng = _dra("first"), _engine(len(tasks))
    set_claims(eng, dra, tasks)  # the DraCluster's strategy
    placed = _order(eng)
    assert sorted(placed) == sorted(tasks)
    got = _devices(eng, dra, tasks)
    # The same claims allocated one by one, in the order the engine placed them, each on what
    # the ones before hold.
    ref = _dra("pack")
    want = {}
    for task in placed:
        [claim] = tasks[task]
        [result] = ref.allocate([claim], NODE, strategy="first").results or []
        want[task] = sorted(r["device"] for r in result["devices"]["results"])
        ref.commit(claim, result)
    assert got == want
    # Kubernetes' order visits gpu-1 first: it opens the second GPU.
    assert {d for ds in got.values() for d in ds} == {f"gpu-1-mig-{i}" for i in range(6)}


def test_pack_fills_the_gpu_already_open_and_a_strategy_given_to_set_claims_wins() -> None:
    tasks = {f"job-{i}": [claim] for i, claim in enumerate(CLAIMS)}
    dra, eng = _dra("first"), _engine(len(tasks))
    set_claims(eng, dra, tasks, strategy="pack")
    assert sorted(_order(eng)) == sorted(tasks)
    # With the earlier claim's gpu-0-mig-0, all seven 1g claims are on gpu-0; gpu-1 stays whole.
    got = _devices(eng, dra, tasks)
    assert {d for ds in got.values() for d in ds} == {f"gpu-0-mig-{i}" for i in range(1, 7)}
    # Committed, they are valid in the DraCluster.
    for _, by_claim in claim_results(eng, dra, tasks).values():
        for claim, allocation in by_claim.items():
            dra.commit(claim, allocation)


def test_the_default_is_the_dra_clusters_strategy() -> None:
    tasks = {"job-0": [CLAIMS[0]]}
    for strategy, device in (("pack", "gpu-0-mig-1"), ("first", "gpu-1-mig-0")):
        dra, eng = _dra(strategy), _engine(1)
        set_claims(eng, dra, tasks)
        _order(eng)
        assert _devices(eng, dra, tasks) == {"job-0": [device]}
        # As the DraCluster allocates by itself.
        [result] = dra.allocate([CLAIMS[0]], NODE).results or []
        assert [r["device"] for r in result["devices"]["results"]] == [device]


def _refused(call: Any, match: str) -> str:
    with pytest.raises(ValueError, match=match) as e:
        call()
    assert "\n" not in str(e.value)
    return str(e.value)


def test_an_unknown_strategy_is_refused_and_the_engine_keeps_its_claims() -> None:
    tasks = {"job-0": [CLAIMS[0]]}
    dra, eng = _dra("pack"), _engine(1)
    set_claims(eng, dra, tasks)
    msg = _refused(lambda: set_claims(eng, dra, tasks, strategy="spread"), "unknown strategy 'spread'")
    assert msg == "set_claims: unknown strategy 'spread' (known: pack, first)"
    _refused(lambda: set_claims(eng, _dra("best"), tasks), "set_claims: unknown strategy 'best'")
    msg = _refused(lambda: _core.engine_dra_set(eng._native, [], [], [], strategy="spread"),
                   "unknown strategy 'spread'")
    assert msg == "engine_dra_set: unknown strategy 'spread' (known: pack, first)"
    # The claims set first are still the engine's, with their strategy.
    _order(eng)
    assert _devices(eng, dra, tasks) == {"job-0": ["gpu-0-mig-1"]}
