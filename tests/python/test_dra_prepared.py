"""The core builds a question from its parts (a node's table, the claims' requests, what is held:
cpp/gpufleet/dra/prepared.h) exactly as the Python reference builds the whole problem
(NodeDevices.problem): on random nodes with partitions, whole devices, devices shared by capacity
and claims allocated before, both give the same answer, for both strategies. Parts made for
another node profile, and holds out of range, are refused."""
from __future__ import annotations

import random
from typing import Any

import pytest

from gpufleet import _core
from gpufleet.dra.node_devices import NodeDevices
from gpufleet.dra.problem import DeviceMatcher, Ledger, features_from

DRIVER = "gpu.example.com"
CLASSES = {"gpu": {"metadata": {"name": "gpu"},
                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}}
NODE = {"metadata": {"name": "n1", "labels": {}}}


def _slices(rng: random.Random) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = []
    sets = []
    for g in range(rng.randint(0, 2)):
        sets.append({"name": f"gpu{g}", "counters": {"slices": {"value": "4"}}})
        for p in range(rng.randint(1, 3)):
            size = rng.choice([1, 2])
            devices.append({"name": f"gpu{g}-p{p}", "attributes": {"numa": {"int": g}, "size": {"int": size},
                                                                   "resource.kubernetes.io/pcieRoot": {"string": f"r{g}"}},
                            "consumesCounters": [{"counterSet": f"gpu{g}", "counters": {"slices": {"value": str(size)}}}]})
    for w in range(rng.randint(1, 3)):
        devices.append({"name": f"dev{w}", "attributes": {"numa": {"int": rng.randint(0, 1)}, "size": {"int": 4}}})
    for s in range(rng.randint(0, 2)):
        devices.append({"name": f"shared{s}", "allowMultipleAllocations": True,
                        "attributes": {"numa": {"int": s}, "size": {"int": 8}},
                        "capacity": {"cores": {"value": "100"}, "memory": {"value": "40Gi"}}})
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 2 if sets else 1}
    out = [{"metadata": {"name": "s0"}, "spec": {"driver": DRIVER, "nodeName": "n1", "pool": pool, "devices": devices}}]
    if sets:
        out.append({"metadata": {"name": "s1"}, "spec": {"driver": DRIVER, "nodeName": "n1", "pool": pool,
                                                         "sharedCounters": sets}})
    return out


def _claims(rng: random.Random, shared: bool) -> list[dict[str, Any]]:
    claims = []
    for c in range(rng.randint(1, 2)):
        ex: dict[str, Any] = {"deviceClassName": "gpu", "count": rng.randint(1, 2)}
        if shared and rng.random() < 0.5:
            ex["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].size == 8'}}]
            ex["capacity"] = {"requests": {"cores": str(rng.choice([10, 30, 60])), "memory": "8Gi"}}
            ex["count"] = 1
        spec: dict[str, Any] = {"requests": [{"name": "r0", "exactly": ex}]}
        if rng.random() < 0.3:
            spec["constraints"] = [{"matchAttribute": f"{DRIVER}/numa"}]
        claims.append({"metadata": {"name": f"c{c}", "namespace": "default"}, "spec": {"devices": spec}})
    return claims


def _ledger(rng: random.Random, table: NodeDevices) -> Ledger:
    """Some devices held whole, some shared capacity consumed."""
    ledger = Ledger()
    for i, ref in enumerate(table.devices):
        if table.multi[i]:
            if rng.random() < 0.5:
                ledger.add_result({"driver": ref.driver, "pool": ref.pool.name, "device": ref.device["name"],
                                   "consumedCapacity": {"cores": "40", "memory": "16Gi"}}, True)
        elif rng.random() < 0.3:
            ledger.add_result({"driver": ref.driver, "pool": ref.pool.name, "device": ref.device["name"]}, False)
    return ledger


def test_prepared_questions_answer_as_the_reference_problem() -> None:
    rng = random.Random(7)
    features = features_from(None)
    matcher = DeviceMatcher()
    compared = allocated = 0
    for _ in range(120):
        table = NodeDevices(NODE, _slices(rng), features)
        ledger = _ledger(rng, table)
        claims = _claims(rng, any(table.multi))
        for strategy in ("pack", "first"):
            reference = _core.dra_solve(table.problem(claims, CLASSES, ledger, matcher, objective=strategy).problem)
            part = table.request_part(claims, CLASSES, ledger, matcher)
            prepared = _core.dra_solve_prepared([(table.native(), part.native(table), table.held(ledger))],
                                                strategy)[0]
            assert prepared.to_dict() == reference, (claims, strategy)
            compared += 1
            allocated += reference["verdict"] == "allocated"
    assert compared == 240 and 60 < allocated < 230


def _table(devices: int) -> NodeDevices:
    sl = {"metadata": {"name": "s"}, "spec": {"driver": DRIVER, "nodeName": "n1",
                                              "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                                              "devices": [{"name": f"d{i}"} for i in range(devices)]}}
    return NodeDevices(NODE, [sl], features_from(None))


def test_parts_of_another_profile_and_holds_out_of_range_are_refused() -> None:
    small, large = _table(2), _table(3)
    claim = {"metadata": {"name": "c", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
    part = small.request_part([claim], CLASSES, Ledger(), DeviceMatcher())
    with pytest.raises(ValueError, match="another node profile"):
        _core.dra_solve_prepared([(large.native(), part.native(small), large.held(Ledger()))])
    with pytest.raises(ValueError, match="device 5 is out of range"):
        _core.DraHeld(small.native(), [5])
    with pytest.raises(ValueError, match="unknown objective 'best'"):
        _core.dra_solve_prepared([(small.native(), part.native(small), small.held(Ledger()))], "best")
    answer = _core.dra_solve_prepared([(small.native(), part.native(small), _core.DraHeld(small.native(), [0, 1]))])[0]
    assert (answer.verdict, answer.reason) == ("unallocatable", "cannot allocate all claims")
