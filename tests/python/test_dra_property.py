"""Property: on small random instances the scored allocation is valid, and no valid allocation
that brute-force enumeration finds scores better (or exists when the allocator finds none).
Instances mix whole devices and partitions of counter sets, PCIe roots, numa values under
matchAttribute / distinctAttribute constraints, firstAvailable lists and several claims."""
from __future__ import annotations

import itertools
import random
from typing import Any

from dra_validity import check_allocation

from gpufleet import _core
from gpufleet.dra import allocate
from gpufleet.dra.problem import DeviceMatcher, Ledger, build, features_from, results_of

DRIVER = "gpu.example.com"
CLASS = {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
NODE = {"metadata": {"name": "n1", "labels": {}}}


def _instance(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    devices = []
    counter_sets = []
    for g in range(rng.randint(1, 2)):  # partitionable GPUs: a counter set of 4 slices each
        counter_sets.append({"name": f"gpu{g}", "counters": {"slices": {"value": "4"}}})
        for p in range(rng.randint(1, 3)):
            size = rng.choice([1, 2])
            devices.append({"name": f"gpu{g}-p{p}", "attributes": {
                "numa": {"int": g % 2}, "size": {"int": size},
                "resource.kubernetes.io/pcieRoot": {"string": f"root{g}"}},
                "consumesCounters": [{"counterSet": f"gpu{g}", "counters": {"slices": {"value": str(size)}}}]})
    for w in range(rng.randint(0, 3)):  # whole devices
        devices.append({"name": f"dev{w}", "attributes": {
            "numa": {"int": rng.randint(0, 1)}, "size": {"int": 4},
            "resource.kubernetes.io/pcieRoot": {"string": f"root{rng.randint(0, 2)}"}}})
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 2 if counter_sets else 1}
    slices = [{"metadata": {"name": "s0"}, "spec": {"driver": DRIVER, "nodeName": "n1", "pool": pool,
                                                    "devices": devices}}]
    if counter_sets:
        slices.append({"metadata": {"name": "s1"}, "spec": {"driver": DRIVER, "nodeName": "n1", "pool": pool,
                                                            "sharedCounters": counter_sets}})
    claims = []
    for c in range(rng.randint(1, 2)):
        requests = []
        for r in range(rng.randint(1, 2)):
            def exact() -> dict[str, Any]:
                ex: dict[str, Any] = {"deviceClassName": "gpu", "count": rng.randint(1, 2)}
                if rng.random() < 0.4:
                    ex["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].size '
                                                            f'{rng.choice(["==", "<=", ">="])} {rng.choice([1, 2, 4])}'}}]
                return ex
            if rng.random() < 0.25:
                requests.append({"name": f"r{r}", "firstAvailable": [
                    {"name": "a", **exact()}, {"name": "b", **exact()}]})
            else:
                requests.append({"name": f"r{r}", "exactly": exact()})
        spec: dict[str, Any] = {"requests": requests}
        if rng.random() < 0.4:
            kind = rng.choice(["matchAttribute", "distinctAttribute"])
            spec["constraints"] = [{kind: f"{DRIVER}/numa"}]
        claims.append({"metadata": {"name": f"c{c}", "namespace": "default"}, "spec": {"devices": spec}})
    return slices, claims


def _counters_hold(slices: list[dict[str, Any]], results: list[dict[str, Any]]) -> bool:
    limits = {cs["name"]: int(cs["counters"]["slices"]["value"])
              for s in slices for cs in s["spec"].get("sharedCounters") or []}
    by_name = {d["name"]: d for s in slices for d in s["spec"].get("devices") or []}
    used: dict[str, int] = {}
    for alloc in results:
        for r in alloc["devices"]["results"]:
            for use in by_name[r["device"]].get("consumesCounters") or []:
                used[use["counterSet"]] = used.get(use["counterSet"], 0) + int(use["counters"]["slices"]["value"])
    return all(used.get(k, 0) <= v for k, v in limits.items())


def _device(candidate: Any) -> int:
    return candidate if isinstance(candidate, int) else candidate["device"]


def _brute_force(built: Any, slices: list[dict[str, Any]]) -> tuple[Any, Any]:
    """(best score, first member vector) over every valid allocation, or (None, None)."""
    problem = built.problem
    cache: dict[Any, bool] = {}
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(problem["requests"]):
        groups.setdefault(r["group"], []).append(i)
    for members in itertools.product(*(groups[g] for g in sorted(groups))):
        best = None
        per_request = []
        for r in members:
            req = problem["requests"][r]
            idx = range(len(req["candidates"]))
            per_request.append([tuple(idx)] if req["all"] else list(itertools.combinations(idx, req["count"])))
        for combo in itertools.product(*per_request):
            choices = [(r, _device(problem["requests"][r]["candidates"][c]), c)
                       for r, cs in zip(members, combo) for c in cs]
            if any(not isinstance(problem["requests"][r]["candidates"][c], int)
                   and problem["requests"][r]["candidates"][c].get("blocked") for r, _, c in choices):
                continue
            results = results_of(built, choices, NODE)
            if check_allocation(built.claims, [CLASS], slices, results, cache):
                continue
            if not _counters_hold(slices, results):
                continue
            score = _core.dra_score(problem, choices)
            key = (score["roots"], score["opened"], score["leftover"])
            best = key if best is None or key < best else best
        if best is not None:
            return best, members
    return None, None


def test_scored_allocation_is_valid_and_no_enumerated_allocation_beats_it() -> None:
    rng = random.Random(20261127)
    checked = allocated = 0
    for _ in range(80):
        slices, claims = _instance(rng)
        out = allocate(NODE, claims, [CLASS], slices)
        built = build(NODE, claims, {"gpu": CLASS}, slices, Ledger(), features_from(None), DeviceMatcher())
        best, _ = _brute_force(built, slices)
        checked += 1
        if best is None:
            assert out.verdict == "unallocatable", (claims, out)
            continue
        assert out.ok, (claims, out.reason)
        allocated += 1
        assert not check_allocation(claims, [CLASS], slices, out.results)
        assert _counters_hold(slices, out.results)
        assert out.proved_best
        got = (out.score["roots"], out.score["opened"], out.score["leftover"])
        assert got == best, (claims, got, best)
    assert checked == 80 and allocated > 20
