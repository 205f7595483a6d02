"""The ResourceSlices NVIDIA's DRA driver publishes (tests/python/data/dra_nvidia_slice.yaml: one
H100 as partitionable devices, and one whose MIG devices exist) join a gpufleet.Cluster's ledger
by the names the driver writes: a whole GPU and its partitions are found by UUID or, where the
Cluster knows no UUIDs, by the minor in the device's name and the memory slots in its
``memory-slice-<i>`` counters or ``memorySlice<i>`` capacities."""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml

from gpufleet import Cluster, Pod
from gpufleet.dra.cluster import DraCluster

DRIVER = "gpu.nvidia.com"
DATA = Path(__file__).parent / "data" / "dra_nvidia_slice.yaml"
GPU_UUID = "GPU-3f2a9c41-7b1e-4d0a-9c55-1a2b3c4d5e00"
# The Cluster splits the partitionable node's GPU: 3g.40gb at slot 0, 2g.20gb at 4, 1g.10gb at 6.
LAYOUT = [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]


@functools.lru_cache(maxsize=1)
def _fixture() -> tuple[dict, ...]:
    return tuple(yaml.safe_load_all(DATA.read_text()))


def _slices(node: str) -> list[dict]:
    return [copy.deepcopy(s) for s in _fixture() if s["spec"]["nodeName"] == node]


def _device(name: str, node: str = "h100-node") -> dict:
    return next(d for s in _slices(node) for d in s["spec"].get("devices") or [] if d["name"] == name)


def _slots(device: dict) -> set[int]:
    """The memory slots a partition of the partitionable node takes, by the fixture's counters."""
    return {int(n.rsplit("-", 1)[1]) for use in device["consumesCounters"] for n in use["counters"]
            if n.startswith("memory-slice-")}


def _ledger(node: str = "h100-node", layout: list[tuple[str, int]] | None = LAYOUT, uuids: bool = False,
            slices: list[dict] | None = None) -> tuple[DraCluster, Cluster]:
    """A Cluster with the node's H100 (split by `layout`, whole when None; its UUIDs known to the
    Cluster only when `uuids`) sharing its ledger with a DraCluster holding the node's slices."""
    gpu: dict = {"type": "gpu", "minor": 0, "model": "NVIDIA H100 80GB HBM3"}
    if layout is None:
        gpu["memory"] = "80Gi"
    else:
        gpu["mig"] = [{"profile": p, "start": s} for p, s in layout]
    if uuids:  # the GPU's, and those of the MIG devices the slices publish
        gpu["id"] = GPU_UUID if node == "h100-node" else GPU_UUID.replace("5e00", "5e01")
        by_place = {}  # (profile, first slot) -> UUID; the name ends in the first slot
        for s in _slices(node):
            for d in s["spec"].get("devices") or []:
                a = d["attributes"]
                if "profile" in a and "uuid" in a:
                    by_place[(a["profile"]["string"], int(d["name"].rsplit("-", 1)[1]))] = a["uuid"]["string"]
        for inst in gpu.get("mig") or []:
            if (inst["profile"], inst["start"]) in by_place:
                inst["id"] = by_place[(inst["profile"], inst["start"])]
    legacy = Cluster()
    legacy.add_node({"name": node, "cpu": "64", "memory": "512Gi", "devices": [gpu]})
    dra = DraCluster(cluster=legacy)
    dra.apply({"kind": "DeviceClass", "metadata": {"name": "mig.nvidia.com"},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    dra.add_node(node)
    for s in slices if slices is not None else _slices(node):
        dra.apply(s)
    return dra, legacy


def _claim(dra: DraCluster, name: str, cel: str) -> str:
    """A claim for one device of the driver matching `cel` (over its attributes `a`)."""
    a = f'device.attributes["{DRIVER}"]'
    dra.apply({"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"}, "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [
            {"cel": {"expression": cel.replace("a.", f"{a}.")}}]}}]}}})
    return f"ml/{name}"


def _commit(dra: DraCluster, claim: str, device: str, pool: str = "h100-node") -> None:
    dra.commit(claim, {"devices": {"results": [{"request": "r", "driver": DRIVER, "pool": pool, "device": device}]}})


def _held(legacy: Cluster, claim: str) -> list[str] | None:
    alloc = legacy.allocation(f"dra:{claim}")
    return None if alloc is None else sorted(f"{g.type} {g.minor}" for g in alloc.devices)


def _allocated(dra: DraCluster, claim: str, node: str = "h100-node") -> str | None:
    out = dra.allocate([claim], node)
    if not out.ok:
        return None
    dra.commit(claim, out.results[0])
    return out.results[0]["devices"]["results"][0]["device"]


@pytest.mark.parametrize("uuids", [False, True])
@pytest.mark.parametrize("cel, device, held", [
    # the whole GPU, which the Cluster splits: all of its instances
    ('a.type == "gpu"', "gpu-0", ["mig-1g.10gb 6", "mig-2g.20gb 4", "mig-3g.40gb 0"]),
    # partitions that are exactly an instance of the Cluster's layout
    ('a.type == "mig" && a.profile == "2g.20gb" && a.parentUUID == "' + GPU_UUID + '"', None, ["mig-2g.20gb 4"]),
    ('a.type == "mig" && a.profile == "3g.40gb"', "gpu-0-mig-3g40gb-9-0", ["mig-3g.40gb 0"]),
    ('a.type == "mig" && a.profile == "1g.10gb"', "gpu-0-mig-1g10gb-19-6", ["mig-1g.10gb 6"]),
    # one the layout lacks: every instance it overlaps
    ('a.type == "mig" && a.profile == "4g.40gb"', "gpu-0-mig-4g40gb-5-0", ["mig-3g.40gb 0"]),
    ('a.type == "mig" && a.profile == "1g.20gb"', "gpu-0-mig-1g20gb-15-4", ["mig-2g.20gb 4"]),
])
def test_claims_map_onto_the_clusters_gpu_and_instances(uuids: bool, cel: str, device: str | None,
                                                        held: list[str]) -> None:
    dra, legacy = _ledger(uuids=uuids)
    claim = _claim(dra, "c", cel)
    if device is None:  # as the scheduler picks it, beside a pod on the 3g.40gb instance at slot 0
        assert legacy.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/mig-3g.40gb": 1}}))[0] is not None
        device = _allocated(dra, claim)
        assert device is not None
        assert _slots(_device(device)) == {4, 5}
    else:
        _commit(dra, claim, device)
    assert _held(legacy, claim) == held
    legacy.check_invariants()
    dra.release(claim)
    assert _held(legacy, claim) is None


@pytest.mark.parametrize("device", ["gpu-0", "gpu-0-mig-7g80gb-0-0", "gpu-0-mig-1g10gb-19-3"])
def test_a_gpu_the_cluster_keeps_whole_is_what_every_partition_takes(device: str) -> None:
    dra, legacy = _ledger(layout=None)
    claim = _claim(dra, "c", "true")
    _commit(dra, claim, device)
    assert _held(legacy, claim) == ["gpu 0"]
    assert legacy.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/gpu": 1}}), commit=False)[0] is None


def _pod_slots(legacy: Cluster) -> set[int]:
    sizes = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 4}
    out: set[int] = set()
    for a in legacy.allocations():
        if not a.pod.startswith("dra:"):
            for g in a.devices:
                profile = g.type.removeprefix("mig-")
                out |= set(range(g.minor, g.minor + sizes[profile]))
    return out


@pytest.mark.parametrize("uuids", [False, True])
def test_a_mig_pod_and_claims_never_share_memory_slots(uuids: bool) -> None:
    dra, legacy = _ledger(uuids=uuids)
    pod, why = legacy.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/mig-1g.10gb": 1}}))
    assert pod is not None, why
    assert _pod_slots(legacy) == {6}
    taken: set[int] = set()
    for i in range(8):  # 1g.10gb claims until none fits
        device = _allocated(dra, _claim(dra, f"c{i}", 'a.type == "mig" && a.profile == "1g.10gb"'))
        if device is None:
            break
        slots = _slots(_device(device))
        assert not slots & _pod_slots(legacy), device
        assert not slots & taken, device
        taken |= slots
    assert taken and 6 not in taken
    legacy.check_invariants()


@pytest.mark.parametrize("uuids", [False, True])
def test_a_claims_partition_is_refused_to_a_mig_pod(uuids: bool) -> None:
    dra, legacy = _ledger(uuids=uuids)
    claim = _claim(dra, "c", 'a.type == "mig" && a.profile == "1g.10gb"')
    _commit(dra, claim, "gpu-0-mig-1g10gb-19-6")
    alloc, why = legacy.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/mig-1g.10gb": 1}}), commit=False)
    assert alloc is None, why
    dra.release(claim)
    assert legacy.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/mig-1g.10gb": 1}}), commit=False)[0] is not None


@pytest.mark.parametrize("uuids", [False, True])
@pytest.mark.parametrize("device, held", [
    ("gpu-0-mig-3g40gb-9-0", ["mig-3g.40gb 0"]),
    ("gpu-0-mig-2g20gb-14-4", ["mig-2g.20gb 4"]),
    ("gpu-0-mig-1g10gb-19-6", ["mig-1g.10gb 6"]),
])
def test_mig_devices_that_exist_map_by_uuid_or_name_and_memory_slice_capacities(
        uuids: bool, device: str, held: list[str]) -> None:
    dra, legacy = _ledger("h100-static", uuids=uuids)
    claim = _claim(dra, "c", "true")
    _commit(dra, claim, device, pool="h100-static")
    assert _held(legacy, claim) == held


def _edited(device: str, edit) -> list[dict]:
    """The partitionable node's slices, with `edit` applied to `device`."""
    slices = _slices("h100-node")
    for s in slices:
        for d in s["spec"].get("devices") or []:
            if d["name"] == device:
                edit(d)
    return slices


def _rename_counters(d: dict, old: str, new: str) -> None:
    for use in d["consumesCounters"]:
        use["counters"] = {n.replace(old, new): v for n, v in use["counters"].items()}


@pytest.mark.parametrize("uuids, edit, held", [
    (False, lambda d: None, ["mig-1g.10gb 6"]),
    # spellings the driver never wrote are not read: memory slots by another counter name, a
    # parent by a parentMinor attribute (on a device not named by the driver)
    (True, lambda d: _rename_counters(d, "memory-slice-", "memoryslice-"), None),
    (False, lambda d: d["attributes"].update({"parentMinor": {"int": 0}}) or d.update(name="part-6"), None),
])
def test_only_the_drivers_spellings_are_read(uuids: bool, edit, held: list[str] | None) -> None:
    slices = _edited("gpu-0-mig-1g10gb-19-6", edit)
    if held is None:  # the counter set lists the counters the partition consumes
        for s in slices:
            for cs in s["spec"].get("sharedCounters") or []:
                cs["counters"]["memoryslice-6"] = {"value": "1"}
    name = next(d["name"] for s in slices for d in s["spec"].get("devices") or []
                if d["name"] in ("gpu-0-mig-1g10gb-19-6", "part-6"))
    dra, legacy = _ledger(uuids=uuids, slices=slices)
    claim = _claim(dra, "c", "true")
    _commit(dra, claim, name)
    assert _held(legacy, claim) == held
