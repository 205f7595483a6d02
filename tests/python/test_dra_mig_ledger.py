"""MIG partitions in one ledger: a partition a claim holds (as NVIDIA's DRA driver publishes them,
partitionable devices consuming their parent's memory-slice counters) is held in a
gpufleet.Cluster as the MIG instance it is, and an instance a pod holds through
nvidia.com/mig-<profile> is in use for DRA; releases give both back, a restore rebuilds it, and
random interleavings of both never give a memory slot of a GPU twice."""
from __future__ import annotations

import random

import pytest

from gpufleet import Cluster, Pod
from gpufleet.dra import DraError
from gpufleet.dra.cluster import DraCluster

DRIVER = "gpu.nvidia.com"
# A100-80GB geometry: profile -> (memory slots, compute slices, first slots).
PROFILES = {"1g.10gb": (1, 1, range(7)), "2g.20gb": (2, 2, (0, 2, 4)), "3g.40gb": (4, 3, (0, 4))}
# GPU 0 is split by the Cluster (3g.40gb at 0, 2g.20gb at 4, 1g.10gb at 6); GPU 1 stays whole.
LAYOUT = [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]


def _legacy(layout: list[tuple[str, int]] = LAYOUT) -> Cluster:
    c = Cluster()
    c.add_node({"name": "n1", "cpu": "64", "memory": "512Gi", "devices": [
        {"type": "gpu", "minor": 0, "id": "GPU-0", "model": "A100-80GB",
         "mig": [{"profile": p, "start": s, "id": f"MIG-0-{s}"} for p, s in layout]},
        {"type": "gpu", "minor": 1, "id": "GPU-1", "model": "A100-80GB", "memory": "80Gi"}]})
    return c


def _slots(first: int, count: int) -> dict:
    return {f"memory-slice-{i}": {"value": "1"} for i in range(first, first + count)}


def _slices() -> list[dict]:
    """Each GPU a counter set of eight memory slots and seven compute slices; the GPU whole takes
    all of them, each partition its slots and slices."""
    pool = {"name": "n1", "generation": 1, "resourceSliceCount": 2}
    sets = [{"name": f"gpu-{g}", "counters": {**_slots(0, 8), "multiprocessors": {"value": "7"}}} for g in (0, 1)]
    devices = []
    for g in (0, 1):
        devices.append({"name": f"gpu-{g}", "attributes": {
            "type": {"string": "gpu"}, "uuid": {"string": f"GPU-{g}"}, "minor": {"int": g}},
            "consumesCounters": [{"counterSet": f"gpu-{g}", "counters": {**_slots(0, 8), "multiprocessors": {"value": "7"}}}]})
        for profile, (size, compute, starts) in PROFILES.items():
            for s in starts:
                devices.append({"name": f"gpu-{g}-{profile.replace('.', '-')}-{s}", "attributes": {
                    "type": {"string": "mig"}, "profile": {"string": profile},
                    "parentUUID": {"string": f"GPU-{g}"}},
                    "consumesCounters": [{"counterSet": f"gpu-{g}", "counters": {
                        **_slots(s, size), "multiprocessors": {"value": str(compute)}}}]})
    return [{"kind": "ResourceSlice", "metadata": {"name": "n1-counters"},
             "spec": {"driver": DRIVER, "nodeName": "n1", "pool": pool, "sharedCounters": sets}},
            {"kind": "ResourceSlice", "metadata": {"name": "n1-devices"},
             "spec": {"driver": DRIVER, "nodeName": "n1", "pool": pool, "devices": devices}}]


def _bridged(layout: list[tuple[str, int]] = LAYOUT) -> tuple[DraCluster, Cluster]:
    legacy = _legacy(layout)
    c = DraCluster(cluster=legacy)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "nvidia"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    c.add_node("n1")
    for sl in _slices():
        c.apply(sl)
    return c, legacy


def _claim(name: str, profile: str | None, parent: str | None = None) -> dict:
    """A claim for one partition of `profile` (the GPU whole when None), on `parent` if given."""
    attrs = f'device.attributes["{DRIVER}"]'
    cel = [f'{attrs}.type == "mig" && {attrs}.profile == "{profile}"' if profile else f'{attrs}.type == "gpu"']
    if parent:
        cel.append(f'{attrs}.{"parentUUID" if profile else "uuid"} == "{parent}"')
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"}, "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "nvidia", "selectors": [
            {"cel": {"expression": " && ".join(cel)}}]}}]}}}


def _result(device: str) -> dict:
    return {"devices": {"results": [{"request": "r", "driver": DRIVER, "pool": "n1", "device": device}]}}


def _pod(name: str, resource: str) -> Pod:
    return Pod.from_dict({"name": name, "requests": {resource: 1}})


def _device(c: DraCluster, claim: str) -> str:
    return c.claim(claim)["status"]["allocation"]["devices"]["results"][0]["device"]


@pytest.mark.parametrize("device, held, refused, placed", [
    # the partition that is exactly an instance of the Cluster's layout: that instance
    ("gpu-0-1g-10gb-6", ["mig-1g.10gb 6"], "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"),
    ("gpu-0-3g-40gb-0", ["mig-3g.40gb 0"], "nvidia.com/mig-3g.40gb", "nvidia.com/mig-2g.20gb"),
    # a partition the layout lacks takes every instance it overlaps
    ("gpu-0-3g-40gb-4", ["mig-2g.20gb 4", "mig-1g.10gb 6"], "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"),
    ("gpu-0-1g-10gb-1", ["mig-3g.40gb 0"], "nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb"),
    # the parent whole takes all of its instances; a partition of a GPU the Cluster keeps whole
    # takes that GPU
    ("gpu-0", ["mig-3g.40gb 0", "mig-2g.20gb 4", "mig-1g.10gb 6"], "nvidia.com/mig-1g.10gb", "nvidia.com/gpu"),
    ("gpu-1-2g-20gb-2", ["gpu 1"], "nvidia.com/gpu", "nvidia.com/mig-2g.20gb"),
])
def test_a_partition_a_claim_holds_is_refused_to_pods(device: str, held: list[str], refused: str, placed: str) -> None:
    c, legacy = _bridged()
    c.apply(_claim("a", None))
    c.commit("ml/a", _result(device))
    pseudo = legacy.allocation("dra:ml/a")
    assert sorted(f"{g.type} {g.minor}" for g in pseudo.devices) == sorted(held)
    alloc, why = legacy.place(_pod("p", refused), commit=False)
    assert alloc is None, why
    assert legacy.place(_pod("q", placed), commit=False)[0] is not None
    legacy.check_invariants()
    c.release("ml/a")  # gives it back
    assert legacy.allocation("dra:ml/a") is None
    assert legacy.place(_pod("p", refused), commit=False)[0] is not None


@pytest.mark.parametrize("resource, free, taken", [
    # a pod's 3g.40gb instance (slots 0-3): the partitions there and the parent whole are taken,
    # the partitions on slots 4-7 are not
    ("nvidia.com/mig-3g.40gb", ["gpu-0-1g-10gb-4", "gpu-0-1g-10gb-6", "gpu-0-3g-40gb-4"],
     ["gpu-0", "gpu-0-3g-40gb-0", "gpu-0-2g-20gb-2", "gpu-0-1g-10gb-0", "gpu-0-1g-10gb-3"]),
    ("nvidia.com/mig-1g.10gb", ["gpu-0-3g-40gb-0", "gpu-0-2g-20gb-4", "gpu-0-1g-10gb-5"],
     ["gpu-0", "gpu-0-1g-10gb-6", "gpu-0-3g-40gb-4"]),
    # a pod on the GPU the Cluster keeps whole: none of its partitions is free
    ("nvidia.com/gpu", ["gpu-0", "gpu-0-1g-10gb-0"], ["gpu-1", "gpu-1-1g-10gb-0", "gpu-1-3g-40gb-4"]),
])
def test_an_instance_a_pod_holds_is_in_use_for_claims(resource: str, free: list[str], taken: list[str]) -> None:
    c, legacy = _bridged()
    assert legacy.place(_pod("p", resource))[0] is not None
    for i, device in enumerate(free + taken):
        c.apply(_claim(f"c{i}", None))
        if device in free:
            c.commit(f"ml/c{i}", _result(device))
            c.release(f"ml/c{i}")
        else:
            with pytest.raises(DraError):
                c.commit(f"ml/c{i}", _result(device))
            assert legacy.allocation(f"dra:ml/c{i}") is None
    # What a question offers agrees: the whole parent is unallocatable while the pod holds it.
    parent = "GPU-1" if resource == "nvidia.com/gpu" else "GPU-0"
    c.apply(_claim("whole", None, parent))
    assert c.allocate(["ml/whole"], "n1").verdict == "unallocatable"
    legacy.release("p")
    assert c.allocate(["ml/whole"], "n1").ok


@pytest.mark.parametrize("layout, claims", [
    # seven 1g instances: each partition is exactly one, the pod's leaves six for claims
    ([("1g.10gb", s) for s in range(7)], 6),
    # 3g at 0, 2g at 4, 1g at 6 (the pod's): a 1g partition elsewhere takes the instance it lies
    # in, so one claim gets slots 0-3 and one slots 4-5
    (LAYOUT, 2),
])
def test_a_pods_instance_leaves_the_rest_of_the_parent_to_claims(layout: list[tuple[str, int]], claims: int) -> None:
    """A pod's 1g instance takes its partition's counters from the parent once (the parent whole
    is refused by them, not counted again), so the other partitions stay free for claims."""
    c, legacy = _bridged(layout)
    assert legacy.place(_pod("p", "nvidia.com/mig-1g.10gb"))[0] is not None
    pod_slot = legacy.allocation("p").devices[0].minor
    devices = []
    for i in range(claims + 1):
        c.apply(_claim(f"c{i}", "1g.10gb", "GPU-0"))
        out = c.allocate([f"ml/c{i}"], "n1")
        if i == claims:
            assert out.verdict == "unallocatable"
            break
        assert out.ok, (i, out.reason)
        c.commit(f"ml/c{i}", out.results[0])
        devices.append(_device(c, f"ml/c{i}"))
    assert f"gpu-0-1g-10gb-{pod_slot}" not in devices and len(set(devices)) == claims
    legacy.check_invariants()


def test_restore_rebuilds_the_held_instances() -> None:
    c, legacy = _bridged()
    c.apply(_claim("a", "2g.20gb"))
    c.commit("ml/a", _result("gpu-0-2g-20gb-4"))
    snap = c.snapshot()
    fresh = _legacy()  # as after a restart: the Cluster knows no pseudo-pod
    again = DraCluster.restore(snap, cluster=fresh)
    assert [f"{g.type} {g.minor}" for g in fresh.allocation("dra:ml/a").devices] == ["mig-2g.20gb 4"]
    assert fresh.place(_pod("p", "nvidia.com/mig-2g.20gb"), commit=False)[0] is None
    again.release("ml/a")
    assert fresh.place(_pod("p", "nvidia.com/mig-2g.20gb"), commit=False)[0] is not None
    # A restore into a Cluster whose pod holds the instance meanwhile is refused.
    taken = _legacy()
    assert taken.place(_pod("p", "nvidia.com/mig-2g.20gb"))[0] is not None
    with pytest.raises(DraError, match="held outside DRA"):
        DraCluster.restore(snap, cluster=taken)


def test_on_a_single_strategy_node_the_instances_are_gpus() -> None:
    """With mig_strategy single the Cluster's instances are gpu devices (minor 8 x GPU + slot),
    asked for through nvidia.com/gpu: a claim's partition holds that gpu, a pod's is in use."""
    legacy = Cluster()
    legacy.add_node({"name": "n1", "cpu": "64", "memory": "512Gi", "mig_strategy": "single", "devices": [
        {"type": "gpu", "minor": g, "id": f"GPU-{g}", "model": "A100-80GB",
         "mig": [{"profile": "1g.10gb", "start": s} for s in range(7)]} for g in (0, 1)]})
    c = DraCluster(cluster=legacy)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "nvidia"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    c.add_node("n1")
    for sl in _slices():
        c.apply(sl)
    c.apply(_claim("a", None))
    c.commit("ml/a", _result("gpu-0-1g-10gb-3"))
    assert [f"{g.type} {g.minor}" for g in legacy.allocation("dra:ml/a").devices] == ["gpu 3"]
    assert legacy.place(_pod("p", "nvidia.com/gpu"))[0].devices[0].minor == 0
    c.apply(_claim("b", "1g.10gb", "GPU-0"))
    out = c.allocate(["ml/b"], "n1")
    assert out.results[0]["devices"]["results"][0]["device"] not in ("gpu-0-1g-10gb-0", "gpu-0-1g-10gb-3")
    c.commit("ml/b", out.results[0])
    c.apply(_claim("whole", None, "GPU-0"))
    assert c.allocate(["ml/whole"], "n1").verdict == "unallocatable"
    legacy.check_invariants()


@pytest.mark.parametrize("attributes, capacity, held", [
    # by the instance's UUID alone
    ({"type": {"string": "mig"}, "uuid": {"string": "MIG-0-4"}}, {}, ["mig-2g.20gb 4"]),
    # by parentUUID and the memorySlice<i> capacities, with the driver's domain on the names
    ({"gpu.nvidia.com/type": {"string": "mig"}, "gpu.nvidia.com/profile": {"string": "1g.10gb"},
      "gpu.nvidia.com/parentUUID": {"string": "GPU-0"}}, {"memorySlice6": {"value": "1"}}, ["mig-1g.10gb 6"]),
    # no memory slots, or a parent the node lacks: DRA's alone
    ({"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}, "parentUUID": {"string": "GPU-0"}},
     {"memory": {"value": "10Gi"}}, None),
    ({"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}, "parentUUID": {"string": "GPU-5"}},
     {"memorySlice6": {"value": "1"}}, None),
])
def test_how_a_partition_is_found(attributes: dict, capacity: dict, held: list[str] | None) -> None:
    c, legacy = _bridged()
    c.apply({"kind": "ResourceSlice", "metadata": {"name": "n1-extra"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "extra", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "part", "attributes": attributes, "capacity": capacity}]}})
    c.apply(_claim("a", None))
    c.commit("ml/a", {"devices": {"results": [{"request": "r", "driver": DRIVER, "pool": "extra", "device": "part"}]}})
    pseudo = legacy.allocation("dra:ml/a")
    assert (None if pseudo is None else [f"{g.type} {g.minor}" for g in pseudo.devices]) == held


def _taken_slots(c: DraCluster, legacy: Cluster) -> list[tuple[int, int]]:
    """Every (GPU, memory slot) given out, once per holder: the claims' partitions by their
    counters, the pods' instances and whole GPUs by the Cluster's layout."""
    out: list[tuple[int, int]] = []
    sizes = {p: size for p, (size, _, _) in PROFILES.items()}
    for name in c.claim_names():
        alloc = (c.claim(name).get("status") or {}).get("allocation")
        if alloc:
            device = alloc["devices"]["results"][0]["device"]
            parts = device.split("-")
            gpu = int(parts[1])
            if len(parts) == 2:
                out += [(gpu, s) for s in range(8)]
            else:
                first = int(parts[-1])
                out += [(gpu, s) for s in range(first, first + sizes[f"{parts[2]}.{parts[3]}"])]
    for a in legacy.allocations():
        if a.pod.startswith("dra:"):
            continue
        for g in a.devices:
            if g.type == "gpu":
                out += [(g.minor, s) for s in range(8)]
            else:
                first = g.minor % 8
                out += [(g.minor // 8, s) for s in range(first, first + sizes[g.type[4:]])]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_interleavings_never_give_a_slot_twice(seed: int) -> None:
    """Pods asking through nvidia.com/mig-<profile> and nvidia.com/gpu and claims for partitions
    or whole GPUs, placed and released in a random order: no memory slot of a GPU is ever held
    twice, the Cluster's books balance, and a claim a question allocates can be committed."""
    rng = random.Random(seed)
    c, legacy = _bridged()
    pods: list[str] = []
    claims: list[str] = []
    for step in range(40):
        action = rng.random()
        if action < 0.35:
            resource = rng.choice(["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb",
                                   "nvidia.com/mig-3g.40gb", "nvidia.com/gpu"])
            if legacy.place(_pod(f"p{step}", resource))[0] is not None:
                pods.append(f"p{step}")
        elif action < 0.75:
            c.apply(_claim(f"c{step}", rng.choice([None, *PROFILES])))
            out = c.allocate([f"ml/c{step}"], "n1", strategy=rng.choice(["pack", "first"]))
            if out.ok:
                c.commit(f"ml/c{step}", out.results[0])  # never refused: the question saw the pods
                claims.append(f"ml/c{step}")
        elif pods and action < 0.87:
            legacy.release(pods.pop(rng.randrange(len(pods))))
        elif claims:
            c.release(claims.pop(rng.randrange(len(claims))))
        taken = _taken_slots(c, legacy)
        assert len(taken) == len(set(taken)), f"seed {seed} step {step}: a slot given twice"
        legacy.check_invariants()
    # Everything released gives every slot back.
    for p in pods:
        legacy.release(p)
    for name in claims:
        c.release(name)
    assert _taken_slots(c, legacy) == [] and legacy.allocations() == []


# --- the batch engine ------------------------------------------------------------------------------

def _engine_with_claims():  # type: ignore[no-untyped-def]
    from gpufleet.engine import Engine
    eng = Engine()
    eng.add_queue("q", weight=1)
    eng.add_node({"name": "n1", "cpu": "64", "memory": "512Gi", "devices": [
        {"type": "gpu", "minor": 0, "id": "GPU-0", "model": "A100-80GB",
         "mig": [{"profile": "1g.10gb", "start": s} for s in range(7)]},
        {"type": "gpu", "minor": 1, "id": "GPU-1", "model": "A100-80GB", "memory": "80Gi"}]})
    dra = DraCluster()
    dra.apply({"kind": "DeviceClass", "metadata": {"name": "nvidia"},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    dra.add_node("n1")
    for sl in _slices():
        dra.apply(sl)
    return eng, dra


def test_the_engine_holds_a_claims_mig_instance_and_sees_a_pods() -> None:
    from gpufleet.dra.engine import claim_results, set_claims
    eng, dra = _engine_with_claims()
    # Two tasks with a claim for a 1g partition of GPU 0: each task's allocation takes the
    # claim's instance.
    for name in ("a", "b"):
        dra.apply(_claim(name, "1g.10gb", "GPU-0"))
        eng.submit({"name": name, "queue": "q", "replicas": 1, "requests": {"cpu": "1"}})
    tasks = {"a-0": ["ml/a"], "b-0": ["ml/b"]}
    set_claims(eng, dra, tasks)
    binds = {b["task"]: b for b in eng.run_cycle(now=1).binds.to_dict("records")}
    assert set(binds) == {"a-0", "b-0"}
    results = claim_results(eng, dra, tasks)
    slots = set()
    for task in tasks:
        device = results[task][1][tasks[task][0]]["devices"]["results"][0]["device"]
        [grant] = binds[task]["devices"]
        assert (grant.type, grant.minor) == ("mig-1g.10gb", int(device.rsplit("-", 1)[1]))
        slots.add(grant.minor)
        dra.commit(tasks[task][0], results[task][1][tasks[task][0]])
    assert len(slots) == 2
    # Committed, the claims' instances leave GPU 0's other partitions to later claims.
    dra.apply(_claim("c", "1g.10gb", "GPU-0"))
    eng.submit({"name": "c", "queue": "q", "replicas": 1, "requests": {"cpu": "1"}})
    set_claims(eng, dra, {"c-0": ["ml/c"]})
    [c] = eng.run_cycle(now=2).binds.to_dict("records")
    assert c["devices"][0].minor not in slots
    slots.add(c["devices"][0].minor)
    # Pods asking through nvidia.com/mig-1g.10gb find the four instances left, not seven.
    eng.submit({"name": "five", "queue": "q", "replicas": 5, "requests": {"cpu": "1", "nvidia.com/mig-1g.10gb": 1}})
    result = eng.run_cycle(now=3)
    assert len(result.binds) == 0 and "five" in result.pending
    eng.submit({"name": "one", "queue": "q", "replicas": 1, "requests": {"cpu": "1", "nvidia.com/mig-1g.10gb": 1}})
    [one] = eng.run_cycle(now=4).binds.to_dict("records")
    assert one["devices"][0].minor not in slots
    # And the reverse: with a pod on one of its instances, GPU 0 whole is not given to a claim
    # (GPU 1 whole is), while a partition the pod leaves free is.
    for name, profile, parent in (("w0", None, "GPU-0"), ("w1", None, "GPU-1"), ("d", "1g.10gb", "GPU-0")):
        dra.apply(_claim(name, profile, parent))
        eng.submit({"name": name, "queue": "q", "replicas": 1, "requests": {"cpu": "1"}})
    set_claims(eng, dra, {"w0-0": ["ml/w0"], "w1-0": ["ml/w1"], "d-0": ["ml/d"]})
    result = eng.run_cycle(now=5)
    binds = {b["task"]: b for b in result.binds.to_dict("records")}
    assert sorted(binds) == ["d-0", "w1-0"] and "w0" in result.pending
    assert binds["d-0"]["devices"][0].minor not in slots | {one["devices"][0].minor}
