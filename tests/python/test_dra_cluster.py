"""DraCluster: objects in, claims allocated and committed into their status (the ledger), bad
input refused with the state unchanged, snapshot/restore from claim status, and many threads
placing and committing at once without ever giving a device twice."""
from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpufleet.dra import DraError
from gpufleet.dra.cluster import DraCluster

DRIVER = "gpu.example.com"


def _slice(node: str, gpus: int) -> dict:
    return {"kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100"}}} for i in range(gpus)]}}


def _claim(name: str, count: int = 1) -> dict:
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"}, "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count, "selectors": [
            {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "H100"'}}]}}]}}}


def _cluster(nodes: dict[str, int]) -> DraCluster:
    c = DraCluster()
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for node, gpus in nodes.items():
        c.add_node(node)
        c.apply(_slice(node, gpus))
    return c


def test_allocate_commit_release_and_the_ledger() -> None:
    c = _cluster({"n1": 2})
    c.apply(_claim("a", 2))
    c.apply(_claim("b"))
    out = c.allocate(["ml/a"], "n1")
    assert out.ok
    c.commit("ml/a", out.results[0], reserved_for=[{"resource": "pods", "name": "p", "uid": "u1"}])
    assert c.claim("ml/a")["status"]["reservedFor"][0]["name"] == "p"
    assert c.allocate(["ml/b"], "n1").verdict == "unallocatable"  # both GPUs are held
    with pytest.raises(DraError, match="already allocated"):
        c.commit("ml/a", out.results[0])
    with pytest.raises(DraError, match="held by another claim"):
        c.commit("ml/b", {"devices": {"results": [dict(out.results[0]["devices"]["results"][0], request="gpu")]}})
    c.release("ml/a")
    c.release("ml/a")  # idempotent
    assert c.allocate(["ml/b"], "n1").ok


def test_place_picks_a_node_that_fits() -> None:
    c = _cluster({"n1": 1, "n2": 4})
    c.apply(_claim("big", 3))
    node, out = c.place(["ml/big"])
    assert node == "n2" and out.ok
    c.apply(_claim("huge", 5))
    node, out = c.place(["ml/huge"])
    assert node is None and out.reason.startswith("0/2 nodes can allocate the claims")


@pytest.mark.parametrize("obj,message", [
    ({"kind": "ResourceClaim", "metadata": {"name": "x"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 0}}]}}}, "count"),
    ({**_slice("n1", 1), "spec": {**_slice("n1", 1)["spec"], "devices": [{"name": "Bad_Name"}]}}, "device name"),
    ({"kind": "Pod", "metadata": {"name": "p"}}, "kind must be one of"),
    ({"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"}, "spec": _claim("c")["spec"],
      "status": {"allocation": {"devices": {"results": [
          {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-9"}]}}}}, "unknown device"),
])
def test_bad_input_changes_nothing(obj: dict, message: str) -> None:
    c = _cluster({"n1": 1})
    c.apply(_claim("held"))
    c.commit("ml/held", c.allocate(["ml/held"], "n1").results[0])
    before = c.snapshot()
    with pytest.raises(DraError) as e:
        c.apply(obj)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert c.snapshot() == before


def test_snapshot_and_restore_rebuild_the_allocations_from_claim_status() -> None:
    c = _cluster({"n1": 2, "n2": 2})
    for name in ("a", "b", "c"):
        c.apply(_claim(name))
        node, out = c.place([f"ml/{name}"])
        c.commit(f"ml/{name}", out.results[0])
    snap = c.snapshot()
    again = DraCluster.restore(snap)
    assert again.snapshot() == snap
    again.apply(_claim("d", 2))
    assert again.place(["ml/d"])[0] is None  # three of four GPUs are held after the restore
    held = copy.deepcopy(snap)
    held["claims"][1]["status"]["allocation"] = held["claims"][0]["status"]["allocation"]
    with pytest.raises(DraError, match="held by another claim"):
        DraCluster.restore(held)


def test_threads_placing_and_committing_never_share_a_device() -> None:
    c = _cluster({f"n{i}": 2 for i in range(4)})
    names = [f"ml/c{i}" for i in range(12)]
    for n in names:
        c.apply(_claim(n.split("/")[1]))

    def place_and_commit(name: str) -> bool:
        for _ in range(20):
            node, out = c.place([name])
            if node is None:
                return False
            try:
                c.commit(name, out.results[0])
                return True
            except DraError:
                continue  # another thread took the device first: ask again
        return False

    with ThreadPoolExecutor(max_workers=6) as pool:
        done = list(pool.map(place_and_commit, names))
    assert sum(done) == 8  # four nodes of two GPUs
    taken = [tuple(r[k] for k in ("pool", "device")) for n in names
             for r in ((c.claim(n).get("status") or {}).get("allocation") or {"devices": {"results": []}})["devices"]["results"]]
    assert len(taken) == len(set(taken)) == 8


# --- one ledger with the device-plugin vocabularies ----------------------------------------------

def _bridged(gpus: int = 2):
    from gpufleet import Cluster
    legacy_cluster = Cluster()
    legacy_cluster.add_node({"name": "n1", "cpu": "16", "memory": "64Gi",
                             "gpus": {"count": gpus, "model": "H100", "memory": "80Gi"}})
    c = DraCluster(cluster=legacy_cluster)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                      "extendedResourceName": "nvidia.com/gpu"}})
    c.add_node("n1")
    sl = _slice("n1", gpus)
    for i, d in enumerate(sl["spec"]["devices"]):
        d["attributes"].update({"type": {"string": "gpu"}, "minor": {"int": i}})
    c.apply(sl)
    return c, legacy_cluster


def test_a_device_held_by_a_claim_is_not_given_to_a_pod_and_the_reverse() -> None:
    from gpufleet import Pod
    c, legacy_cluster = _bridged(2)
    c.apply(_claim("a"))
    out = c.allocate(["ml/a"], "n1")
    c.commit("ml/a", out.results[0])
    held = out.results[0]["devices"]["results"][0]["device"]
    pseudo = legacy_cluster.allocation("dra:ml/a")
    assert pseudo is not None and [g.minor for g in pseudo.devices] == [int(held.split("-")[1])]
    # A pod asking through nvidia.com/gpu gets the other GPU only.
    alloc, why = legacy_cluster.place(Pod.from_dict({"name": "p2", "requests": {"nvidia.com/gpu": 2}}), commit=False)
    assert alloc is None and "Insufficient" in why
    alloc, _ = legacy_cluster.place(Pod.from_dict({"name": "p1", "requests": {"nvidia.com/gpu": 1}}))
    assert alloc is not None and alloc.devices[0].minor != int(held.split("-")[1])
    # And the reverse: with p1 on the last GPU, a second claim finds none.
    c.apply(_claim("b"))
    assert c.allocate(["ml/b"], "n1").verdict == "unallocatable"
    legacy_cluster.release("p1")
    assert c.allocate(["ml/b"], "n1").ok
    # Releasing the claim releases its pseudo-pod; a restore rebuilds it from the claim's status.
    snap = c.snapshot()
    c.release("ml/a")
    assert legacy_cluster.allocation("dra:ml/a") is None
    DraCluster.restore(snap, cluster=legacy_cluster)
    assert legacy_cluster.allocation("dra:ml/a") is not None
    legacy_cluster.check_invariants()


def test_commit_refused_when_a_pod_took_the_device_first() -> None:
    from gpufleet import Pod
    c, legacy_cluster = _bridged(1)
    c.apply(_claim("a"))
    out = c.allocate(["ml/a"], "n1")
    legacy_cluster.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/gpu": 1}}))
    before = c.snapshot()
    with pytest.raises(DraError, match="held outside DRA"):
        c.commit("ml/a", out.results[0])
    assert c.snapshot() == before


def test_pod_requests_translate_to_claims() -> None:
    from gpufleet.dra.legacy import claim_from_requests
    classes = [{"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}}]
    claim = claim_from_requests("p", "ml", {"nvidia.com/gpu": 2, "cpu": "4"}, classes)
    assert claim["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}]
    shared = claim_from_requests("p", "ml", {"nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 30}, classes,
                                 shared_class="shared.gpu")
    assert shared["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == {
        "requests": {"memory": "4096Mi", "cores": "30"}}
    assert claim_from_requests("p", "ml", {"cpu": "1"}, classes) is None
    with pytest.raises(DraError, match="no DeviceClass has extendedResourceName koordinator.sh/gpu"):
        claim_from_requests("p", "ml", {"koordinator.sh/gpu": 100}, classes)


def test_grouped_node_search_equals_asking_every_node() -> None:
    """place() asks one node per group of alike nodes and remembers answers; asking every node
    in order (nodes=...) gives the same node and devices after every commit."""
    import random
    rng = random.Random(7)
    sizes = {f"n{i:02d}": rng.choice([2, 4, 4, 8]) for i in range(12)}
    c = _cluster(sizes)
    order = sorted(sizes)
    placed = 0
    for i in range(40):
        name = f"c{i}"
        c.apply(_claim(name, rng.choice([1, 1, 2, 4])))
        fast_node, fast = c.place([f"ml/{name}"])
        slow_node, slow = c.place([f"ml/{name}"], nodes=order)
        again_node, again = c.place([f"ml/{name}"], remember=False)
        assert fast_node == slow_node == again_node
        strip = lambda out: [[(r["request"], r["device"]) for r in a["devices"]["results"]] for a in out.results or []]  # noqa: E731
        assert strip(fast) == strip(slow) == strip(again) and fast.score == slow.score
        if fast_node is not None:
            c.commit(f"ml/{name}", fast.results[0])
            placed += 1
        if i % 7 == 6:  # free one, so states move back as well as forward
            done = [n for n in c.claim_names() if (c.claim(n).get("status") or {}).get("allocation")]
            c.release(rng.choice(done))
    assert placed > 20


def test_place_with_commit_records_what_place_then_commit_would() -> None:
    one, two = _cluster({"n1": 2, "n2": 4}), _cluster({"n1": 2, "n2": 4})
    for c in (one, two):
        for i, n in enumerate([1, 2, 4, 1, 2]):
            c.apply(_claim(f"c{i}", n))
    for i in range(5):
        node_a, out_a = one.place([f"ml/c{i}"], commit=True)
        node_b, out_b = two.place([f"ml/c{i}"])
        if node_b is not None:
            two.commit(f"ml/c{i}", out_b.results[0])
        assert node_a == node_b
    strip = lambda c: [(n, (c.claim(n).get("status") or {}).get("allocation")) for n in c.claim_names()]  # noqa: E731
    assert strip(one) == strip(two)
    # What place(commit=True) returns is the caller's own copy.
    one.apply(_claim("late"))
    one.release("ml/c0")
    node, out = one.place(["ml/late"], commit=True)
    out.results[0]["devices"]["results"][0]["device"] = "changed"
    assert one.claim("ml/late")["status"]["allocation"]["devices"]["results"][0]["device"] != "changed"


def test_gangs_are_all_or_nothing() -> None:
    c = _cluster({"n1": 8, "n2": 8})
    for i in range(5):
        c.apply(_claim(f"g{i}", 4))
    before = c.snapshot()
    nodes, why = c.place_gang([[f"ml/g{i}"] for i in range(5)])  # 20 GPUs of 16
    assert nodes is None and why.startswith("pod 4 of the gang (ml/g4): 0/2 nodes can allocate")
    assert c.snapshot() == before
    nodes, why = c.place_gang([[f"ml/g{i}"] for i in range(4)])
    assert why == "" and sorted(nodes) == ["n1", "n1", "n2", "n2"]
    assert all(c.claim(f"ml/g{i}")["status"]["allocation"] for i in range(4))


def _share_claim(name: str, cores: int, memory: str) -> dict:
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"}, "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "capacity": {
            "requests": {"cores": str(cores), "memory": memory}}}}]}}}


def test_a_gpu_shared_by_capacity_is_one_ledger_with_koordinator_shares() -> None:
    from gpufleet import Pod
    c, legacy_cluster = _bridged(1)
    sl = _slice("n1", 1)
    sl["spec"]["devices"][0].update({"allowMultipleAllocations": True, "capacity": {
        "cores": {"value": "100"}, "memory": {"value": "80Gi"}}})
    sl["spec"]["devices"][0]["attributes"].update({"type": {"string": "gpu"}, "minor": {"int": 0}})
    c.apply(sl)
    c.apply(_share_claim("a", 40, "8Gi"))
    c.commit("ml/a", c.allocate(["ml/a"], "n1").results[0])
    # The claim's share is held in the Cluster: 40% and 8Gi of GPU 0.
    pseudo = legacy_cluster.allocation("dra:ml/a@n1/gpu0")
    assert [(g.minor, g.core, g.memory_bytes) for g in pseudo.devices] == [(0, 40, 8 << 30)]
    assert legacy_cluster.place(Pod.from_dict({"name": "whole", "requests": {"nvidia.com/gpu": 1}}),
                                commit=False)[0] is None
    # And the reverse: a Koordinator share beside it counts for claims, the claim's own share once.
    alloc, _ = legacy_cluster.place(Pod.from_dict({"name": "q", "requests": {
        "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory": "40Gi"}}))
    assert alloc is not None
    c.apply(_share_claim("b", 20, "8Gi"))
    c.apply(_share_claim("c", 10, "8Gi"))
    assert c.allocate(["ml/b"], "n1").verdict == "unallocatable"  # 40 + 50 + 20 > 100
    assert c.allocate(["ml/c"], "n1").ok                           # 40 + 50 + 10
    # Released, the claim's share goes; restored from the claim's status, it comes back.
    snap = c.snapshot()
    c.release("ml/a")
    assert legacy_cluster.allocation("dra:ml/a@n1/gpu0") is None
    assert c.allocate(["ml/b"], "n1").ok
    DraCluster.restore(snap, cluster=legacy_cluster)
    assert legacy_cluster.allocation("dra:ml/a@n1/gpu0") is not None
    legacy_cluster.check_invariants()


def test_a_share_that_does_not_fit_beside_the_pods_is_refused_and_holds_nothing() -> None:
    from gpufleet import Pod
    c, legacy_cluster = _bridged(1)
    sl = _slice("n1", 1)
    sl["spec"]["devices"][0].update({"allowMultipleAllocations": True, "capacity": {
        "cores": {"value": "100"}, "memory": {"value": "80Gi"}}})
    sl["spec"]["devices"][0]["attributes"].update({"type": {"string": "gpu"}, "minor": {"int": 0}})
    c.apply(sl)
    c.apply(_share_claim("a", 60, "8Gi"))
    out = c.allocate(["ml/a"], "n1")
    legacy_cluster.place(Pod.from_dict({"name": "q", "requests": {
        "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory": "40Gi"}}))
    before = c.snapshot()
    with pytest.raises(DraError, match=r"^ResourceClaim ml/a: its share of a GPU on n1 does not fit beside the pods there: "):
        c.commit("ml/a", out.results[0])
    assert c.snapshot() == before and legacy_cluster.allocation("dra:ml/a@n1/gpu0") is None


def test_allocatable_answers_as_allocate_on_each_node() -> None:
    c = _cluster({f"n{i}": 1 + i % 3 for i in range(9)})
    for name, count in (("a", 1), ("b", 2), ("big", 3)):
        c.apply(_claim(name, count))
    c.commit("ml/a", c.allocate(["ml/a"], "n1").results[0])  # n1 now holds like no other node
    nodes = [f"n{i}" for i in range(9)]
    for claims in (["ml/b"], ["ml/big"], ["ml/b", "ml/big"]):
        want = {n: c.allocate(claims, n) for n in nodes}
        assert c.allocatable(claims, nodes) == {n: "" if o.ok else f"{o.verdict}: {o.reason}" for n, o in want.items()}
    assert [n for n, why in c.allocatable(["ml/big"], nodes).items() if not why] == ["n2", "n5", "n8"]
    assert c.allocatable(["ml/b"], ["n1"]) == {"n1": "unallocatable: cannot allocate all claims"}
    c.release("ml/a")
    assert c.allocatable(["ml/b"], ["n1"]) == {"n1": ""}


def test_a_claim_is_held_on_the_node_its_slice_names_now() -> None:
    """The Cluster holds a claim's GPU on the node whose slice publishes the device when the claim
    is committed: a slice republished for another node (or deleted) no longer names the old one."""
    from gpufleet import Cluster
    legacy = Cluster()
    for n in ("n1", "n2"):
        legacy.add_node({"name": n, "cpu": "8", "memory": "64Gi",
                         "devices": [{"type": "gpu", "minor": 0, "id": f"GPU-{n}", "model": "A100",
                                      "memory": "80Gi"}]})
    c = DraCluster(cluster=legacy)
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})

    def publish(node: str) -> None:
        c.apply({"kind": "ResourceSlice", "metadata": {"name": "shared-pool"}, "spec": {
            "driver": "gpu.example.com", "nodeName": node,
            "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": f"GPU-{node}"},
                                                         "minor": {"int": 0}}}]}})

    for n in ("n1", "n2"):
        c.add_node(n)
    publish("n1")
    publish("n2")  # the same device, now served by n2
    claim = {"kind": "ResourceClaim", "metadata": {"name": "a", "namespace": "ml"}, "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
    c.apply(claim)
    c.commit("ml/a", {"devices": {"results": [
        {"request": "r", "driver": "gpu.example.com", "pool": "pool", "device": "gpu-0"}]}})
    assert legacy.allocation("dra:ml/a").node == "n2"
    c.release("ml/a")
    c.delete("ResourceSlice", "shared-pool")  # gone, then back on n1
    publish("n1")
    c.apply({**claim, "metadata": {"name": "b", "namespace": "ml"}})
    c.commit("ml/b", {"devices": {"results": [
        {"request": "r", "driver": "gpu.example.com", "pool": "pool", "device": "gpu-0"}]}})
    assert legacy.allocation("dra:ml/b").node == "n1"


def test_a_claim_whose_allocation_moves_is_held_on_its_new_devices() -> None:
    """A claim re-applied with an allocation on other devices (one watch event) gives its old GPUs
    back to the Cluster at once; a move onto a GPU a pod holds is refused and the old hold stays."""
    from gpufleet import Cluster, Pod
    legacy = Cluster()
    legacy.add_node({"name": "n1", "cpu": "8", "memory": "64Gi", "devices": [
        {"type": "gpu", "minor": m, "id": f"GPU-{m}", "model": "A100", "memory": "80Gi"} for m in range(3)]})
    c = DraCluster(cluster=legacy)
    c.add_node("n1")
    c.apply({"kind": "ResourceSlice", "metadata": {"name": "n1"}, "spec": {
        "driver": "gpu.example.com", "nodeName": "n1",
        "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{m}", "attributes": {"uuid": {"string": f"GPU-{m}"}, "minor": {"int": m}}}
                    for m in range(3)]}})

    def allocated(device: str) -> dict:
        return {"kind": "ResourceClaim", "metadata": {"name": "a", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": {"allocation": {"devices": {"results": [
                    {"request": "r", "driver": "gpu.example.com", "pool": "n1", "device": device}]}}}}

    def held() -> list[int]:
        return [g.minor for g in legacy.allocation("dra:ml/a").devices]

    c.apply(allocated("gpu-0"))
    assert held() == [0]
    c.apply(allocated("gpu-1"))
    assert held() == [1]
    pod = legacy.place(Pod.from_dict({"name": "p", "requests": {"nvidia.com/gpu": 1}}))[0]
    pod_gpu = pod.devices[0].minor
    assert pod_gpu in (0, 2)  # GPU 0 was given back
    with pytest.raises(DraError, match="held outside DRA"):
        c.apply(allocated(f"gpu-{pod_gpu}"))
    assert held() == [1]
    assert c.claim("ml/a")["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
