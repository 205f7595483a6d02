"""Kubernetes' allocation rules as table tests: pools (incomplete, outdated, invalid, counter sets
in their own slices), taints and tolerations, admin access, per-device node selection, binding
conditions, partitionable devices, consumable capacity and feature gates. Each case states the
verdict (and devices) Kubernetes' structured allocator gives."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.dra import allocate

D = "gpu.example.com"
CLASS = {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{D}"'}}]}}
NODE = {"metadata": {"name": "n1", "labels": {"zone": "a"}}}


def dev(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"numa": {"int": 0}}, **extra}


def sl(name: str, devices: list[dict[str, Any]] | None = None, count: int = 1, generation: int = 1,
       **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"driver": D, "pool": {"name": "p", "generation": generation, "resourceSliceCount": count}}
    if devices is not None:
        body["devices"] = devices
    if "sharedCounters" not in spec and not any(k in spec for k in ("nodeSelector", "allNodes", "perDeviceNodeSelection")):
        body["nodeName"] = "n1"
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def claim(count: int | None = 1, mode: str = "ExactCount", **exact: Any) -> dict[str, Any]:
    ex = {"deviceClassName": "gpu", "allocationMode": mode, **exact}
    if count is not None and mode == "ExactCount":
        ex["count"] = count
    return {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [{"name": "r", "exactly": ex}]}}}


def claims_of(n: int, **exact: Any) -> dict[str, Any]:
    """One claim of `n` requests for one device each."""
    return {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [
        {"name": f"r{i}", "exactly": {"deviceClassName": "gpu", "count": 1, **exact}} for i in range(n)]}}}


def run(slices: list[dict], c: dict, allocated: list[dict] = (), features: dict | None = None,
        strategy: str = "first"):
    return allocate(NODE, [c], [CLASS], slices, allocated=allocated, features=features, strategy=strategy)


def devices(out) -> list[str]:
    return [r["device"] for r in out.results[0]["devices"]["results"]]


HELD = {"metadata": {"name": "old", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "x", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {"allocation": {"devices": {"results": [{"request": "x", "driver": D, "pool": "p", "device": "a"}]}}}}

COUNTERS = sl("counters", sharedCounters=[{"name": "g0", "counters": {"mem": {"value": "2"}}}], count=2)
PARTS = sl("parts", [dev(f"m{i}", consumesCounters=[{"counterSet": "g0", "counters": {"mem": {"value": "1"}}}])
                     for i in range(3)], count=2)

CASES = [
    # (name, slices, claim, allocated, features, verdict, devices or error text)
    ("plain", [sl("s", [dev("a"), dev("b")])], claim(2), [], None, "allocated", ["a", "b"]),
    ("incomplete pool offers nothing", [sl("s", [dev("a")], count=2)], claim(1), [], None, "unallocatable", None),
    ("incomplete pool and All is an error", [sl("s", [dev("a")], count=2)], claim(None, "All"), [], None, "error",
     "asks for all devices, but resource pool gpu.example.com/p is currently being updated"),
    ("outdated generation ignored", [sl("old", [dev("a")]), sl("new", [dev("b")], generation=2)], claim(1), [],
     None, "allocated", ["b"]),
    ("duplicate device name: invalid pool", [sl("s1", [dev("a")], count=2), sl("s2", [dev("a")], count=2)], claim(1),
     [], None, "error", "invalid resource pools were encountered"),
    ("held device is in use", [sl("s", [dev("a"), dev("b")])], claim(2), [HELD], None, "unallocatable", None),
    ("All takes held devices too, so fails", [sl("s", [dev("a"), dev("b")])], claim(None, "All"), [HELD], None,
     "unallocatable", None),
    ("admin access uses held devices", [sl("s", [dev("a"), dev("b")])], claim(2, adminAccess=True), [HELD], None,
     "allocated", ["a", "b"]),
    ("admin access needs the feature", [sl("s", [dev("a")])], claim(1, adminAccess=True), [], {"AdminAccess": False},
     "error", "admin access is requested, but the feature is disabled"),
    ("NoSchedule taint blocks", [sl("s", [dev("a", taints=[{"key": "k", "effect": "NoSchedule"}])])], claim(1), [],
     None, "unallocatable", None),
    ("None taint does not block", [sl("s", [dev("a", taints=[{"key": "k", "effect": "None"}])])], claim(1), [], None,
     "allocated", ["a"]),
    ("tolerated taint", [sl("s", [dev("a", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])])],
     claim(1, tolerations=[{"key": "k", "operator": "Equal", "value": "v"}]), [], None, "allocated", ["a"]),
    ("taints ignored without the feature", [sl("s", [dev("a", taints=[{"key": "k", "effect": "NoSchedule"}])])],
     claim(1), [], {"DeviceTaints": False}, "allocated", ["a"]),
    ("All with a tainted device fails", [sl("s", [dev("a"), dev("b", taints=[{"key": "k", "effect": "NoSchedule"}])])],
     claim(None, "All"), [], None, "unallocatable", None),
    ("node selector slice", [sl("s", [dev("a")], nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}]})], claim(1), [], None, "allocated", ["a"]),
    ("node selector elsewhere", [sl("s", [dev("a")], nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b"]}]}]})], claim(1), [], None, "unallocatable", None),
    ("per-device node selection", [sl("s", [dev("a", nodeName="n2"), dev("b", allNodes=True)], perDeviceNodeSelection=True)],
     claim(1), [], None, "allocated", ["b"]),
    ("binding conditions need the feature", [sl("s", [dev("a", bindingConditions=["ready"], bindsToNode=True)])],
     claim(1), [], {"DeviceBindingAndStatus": False}, "unallocatable", None),
    ("counters limit partitions", [COUNTERS, PARTS], claim(3), [], None, "unallocatable", None),
    ("counters allow two", [COUNTERS, PARTS], claim(2), [], None, "allocated", ["m0", "m1"]),
    ("counters held by an allocated partition", [COUNTERS, PARTS], claim(2), [
        {**HELD, "status": {"allocation": {"devices": {"results": [{"request": "x", "driver": D, "pool": "p", "device": "m2"}]}}}}],
     None, "unallocatable", None),
    ("a counter set slice serves every node", [sl("counters", sharedCounters=[{"name": "g0", "counters": {"mem": {"value": "2"}}}],
                                                  count=2), PARTS], claim(1), [], None, "allocated", ["m0"]),
    ("unknown counter set: invalid pool", [sl("counters", sharedCounters=[{"name": "other", "counters": {"mem": {"value": "2"}}}],
                                              count=2), PARTS], claim(1), [], None, "error", "counter set g0 not found"),
    ("partitions need the feature", [COUNTERS, PARTS], claim(1), [], {"PartitionableDevices": False}, "unallocatable", None),
    ("shared device by capacity", [sl("s", [dev("a", allowMultipleAllocations=True, capacity={"mem": {"value": "10"}})])],
     claims_of(2, capacity={"requests": {"mem": "5"}}), [], None, "allocated", ["a", "a"]),
    ("shared device over capacity", [sl("s", [dev("a", allowMultipleAllocations=True, capacity={"mem": {"value": "10"}})])],
     claims_of(3, capacity={"requests": {"mem": "5"}}), [], None, "unallocatable", None),
    ("one request takes a shared device once", [sl("s", [dev("a", allowMultipleAllocations=True,
                                                           capacity={"mem": {"value": "10"}})])],
     claim(2, capacity={"requests": {"mem": "5"}}), [], None, "unallocatable", None),
    ("distinctAttribute needs the implementation behind consumable capacity", [sl("s", [dev("a"), dev("b")])],
     {**claim(1), "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}],
                                       "constraints": [{"distinctAttribute": f"{D}/numa"}]}}}, [],
     {"AdminAccess": True, "PrioritizedList": True, "PartitionableDevices": True, "DeviceTaints": True},
     "error", "claim default/c, constraint #0: empty constraint (unsupported constraint type?)"),
    ("capacity requests need the feature", [sl("s", [dev("a", capacity={"mem": {"value": "10"}})])],
     claim(1, capacity={"requests": {"mem": "5"}}), [], {"ConsumableCapacity": False}, "error",
     "has capacity requests, but the DRAConsumableCapacity feature is disabled"),
    ("capacity names a capacity the device lacks", [sl("s", [dev("a", capacity={"mem": {"value": "10"}})])],
     claim(1, capacity={"requests": {"cores": "5"}}), [], None, "unallocatable", None),
    ("policy: a request above max skips the device", [sl("s", [dev("a", allowMultipleAllocations=True, capacity={
        "mem": {"value": "10", "requestPolicy": {"default": "2", "validRange": {"min": "2", "max": "4", "step": "2"}}}})])],
     claim(1, capacity={"requests": {"mem": "5"}}), [], None, "unallocatable", None),
    ("unknown class", [sl("s", [dev("a")])], {**claim(1), "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "nope"}}]}}}, [], None, "error",
     "could not retrieve device class nope"),
]


@pytest.mark.parametrize("name,slices,c,allocated,features,verdict,expect", CASES, ids=[c[0] for c in CASES])
def test_rule(name, slices, c, allocated, features, verdict, expect) -> None:
    for strategy in ("first", "pack"):
        out = run(copy.deepcopy(slices), copy.deepcopy(c), copy.deepcopy(allocated), features, strategy)
        assert out.verdict == verdict, (name, strategy, out.reason)
        if verdict == "allocated" and strategy == "first":
            assert devices(out) == expect
        if verdict == "error":
            assert expect in out.reason, out.reason


def test_shared_device_results_carry_consumed_capacity_and_share_ids() -> None:
    out = run([sl("s", [dev("a", allowMultipleAllocations=True, capacity={
        "mem": {"value": "10", "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2"}}}})])],
        claims_of(2, capacity={"requests": {"mem": "3"}}))
    results = out.results[0]["devices"]["results"]
    assert [r["consumedCapacity"] for r in results] == [{"mem": "4"}, {"mem": "4"}]  # 3 rounds up to 4
    assert len({r["shareID"] for r in results}) == 2


def test_a_question_too_large_is_an_error_on_one_line() -> None:
    claims = [{"metadata": {"name": f"c{i}", "namespace": "default"}, "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "gpu", "count": 32}}]}}} for i in range(130)]
    out = allocate(NODE, claims, [CLASS], [sl("s", [dev("a")])])
    assert out.verdict == "error"
    assert out.reason == "130 claims ask for 4160 devices together (list members counted), more than 4096 in one question"
