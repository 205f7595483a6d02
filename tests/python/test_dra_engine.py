"""Pods with claims in the batch engine's gangs (gpufleet.dra.engine): a task fits a node only
where its claims can be allocated, a gang's claims are allocated together or not at all, and the
claims' GPUs are held in the engine's accounting (and the accounting's in use for claims)."""
from __future__ import annotations

from typing import Any

from gpufleet.dra import DraCluster
from gpufleet.dra.engine import claim_results, set_claims
from gpufleet.engine import Engine

DRIVER = "gpu.example.com"
MODELS = {"n1": "A100", "n2": "H100"}


def _setup() -> tuple[Engine, DraCluster]:
    eng = Engine()
    eng.add_queue("q", weight=1)
    dra = DraCluster()
    dra.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for node, model in MODELS.items():
        eng.add_node({"name": node, "cpu": "64", "memory": "512Gi",
                      "gpus": {"count": 2, "model": model, "memory": "80Gi"}})
        dra.add_node(node)
        dra.apply({"kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"}, "spec": {
            "driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{m}", "attributes": {"type": {"string": "gpu"}, "minor": {"int": m},
                                                            "model": {"string": model}}} for m in range(2)]}})
    return eng, dra


def _claims(dra: DraCluster, job: str, count: int) -> dict[str, list[str]]:
    """One claim per task of `job` for one H100."""
    out = {}
    for i in range(count):
        dra.apply({"kind": "ResourceClaim", "metadata": {"name": f"{job}-{i}", "namespace": "ml"}, "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "selectors": [{"cel": {
                "expression": f'device.attributes["{DRIVER}"].model == "H100"'}}]}}]}}})
        out[f"{job}-{i}"] = [f"ml/{job}-{i}"]
    return out


def _binds(result: Any) -> list[dict[str, Any]]:
    return result.binds.to_dict("records")


def test_a_gang_of_claim_pods_lands_where_its_claims_fit_and_holds_their_gpus() -> None:
    eng, dra = _setup()
    tasks = _claims(dra, "train", 2)
    eng.submit({"name": "train", "queue": "q", "replicas": 2, "requests": {"cpu": "1"}})
    set_claims(eng, dra, tasks)
    binds = _binds(eng.run_cycle(now=1))
    assert sorted((b["task"], b["node"]) for b in binds) == [("train-0", "n2"), ("train-1", "n2")]
    # Each task's allocation takes its claim's GPU whole.
    assert sorted(d.minor for b in binds for d in b["devices"]) == [0, 1]
    results = claim_results(eng, dra, tasks)
    devices = set()
    for task, (node, by_claim) in results.items():
        assert node == "n2"
        [allocation] = by_claim.values()
        [res] = allocation["devices"]["results"]
        assert (res["driver"], res["pool"], res["request"]) == (DRIVER, "n2", "gpu")
        devices.add(res["device"])
        minor = next(d.minor for b in binds if b["task"] == task for d in b["devices"])
        assert res["device"] == f"gpu-{minor}"  # the engine's GPU is the claim's device
    assert devices == {"gpu-0", "gpu-1"}
    # The claims hold n2's GPUs in the accounting: three whole GPUs fit nowhere now.
    eng.submit({"name": "plain", "queue": "q", "replicas": 3, "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
    result = eng.run_cycle(now=2)
    assert not _binds(result) and "plain" in result.pending
    # Committed into the DraCluster, the allocations are valid there.
    for _, by_claim in results.values():
        for claim, allocation in by_claim.items():
            dra.commit(claim, allocation)


def test_a_gang_whose_claims_do_not_all_fit_is_not_placed_and_holds_nothing() -> None:
    eng, dra = _setup()
    tasks = _claims(dra, "big", 3)  # three H100s asked, two exist
    eng.submit({"name": "big", "queue": "q", "replicas": 3, "requests": {"cpu": "1"}})
    set_claims(eng, dra, tasks)
    result = eng.run_cycle(now=1)
    assert not _binds(result) and "big" in result.pending
    assert claim_results(eng, dra, tasks) == {}
    # Nothing is left held: a gang of two such tasks fits afterwards.
    eng.delete("big")
    small = _claims(dra, "small", 2)
    eng.submit({"name": "small", "queue": "q", "replicas": 2, "requests": {"cpu": "1"}})
    set_claims(eng, dra, small)
    assert sorted(b["node"] for b in _binds(eng.run_cycle(now=2))) == ["n2", "n2"]


def test_a_gpu_a_pod_holds_is_in_use_for_claims() -> None:
    eng, dra = _setup()
    eng.submit({"name": "plain", "queue": "q", "replicas": 1, "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
    eng.start_task("plain", 0, "n2")
    tasks = _claims(dra, "train", 2)
    eng.submit({"name": "train", "queue": "q", "replicas": 2, "requests": {"cpu": "1"}})
    set_claims(eng, dra, tasks)
    result = eng.run_cycle(now=1)
    assert not [b for b in _binds(result) if b["job"] == "train"] and "train" in result.pending
    # One claim pod alone fits on the GPU left.
    eng.delete("train")
    one = _claims(dra, "one", 1)
    eng.submit({"name": "one", "queue": "q", "replicas": 1, "requests": {"cpu": "1"}})
    set_claims(eng, dra, one)
    binds = _binds(eng.run_cycle(now=2))
    assert [(b["task"], b["node"]) for b in binds] == [("one-0", "n2")]
    plain_minor = eng.cluster.allocation("plain-0").devices[0].minor
    [(_, by_claim)] = claim_results(eng, dra, one).values()
    [res] = by_claim["ml/one-0"]["devices"]["results"]
    assert res["device"] == f"gpu-{1 - plain_minor}" == f"gpu-{binds[0]['devices'][0].minor}"


def test_claims_on_a_gpu_shared_by_capacity_take_their_share_in_the_engine() -> None:
    eng = Engine()
    eng.add_queue("q", weight=1)
    eng.add_node({"name": "n1", "cpu": "64", "memory": "512Gi", "gpus": {"count": 1, "model": "H100", "memory": "80Gi"}})
    dra = DraCluster()
    dra.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    dra.add_node("n1")
    dra.apply({"kind": "ResourceSlice", "metadata": {"name": "n1-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "allowMultipleAllocations": True,
                     "attributes": {"type": {"string": "gpu"}, "minor": {"int": 0}},
                     "capacity": {"cores": {"value": "100"}, "memory": {"value": "80Gi"}}}]}})

    def shares(job: str, count: int) -> dict[str, list[str]]:
        for i in range(count):
            dra.apply({"kind": "ResourceClaim", "metadata": {"name": f"{job}-{i}", "namespace": "ml"}, "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "capacity": {
                    "requests": {"cores": "30", "memory": "10Gi"}}}}]}}})
        return {f"{job}-{i}": [f"ml/{job}-{i}"] for i in range(count)}

    # A pod holds 10% of the GPU: four 30% shares do not fit beside it (as a gang), three do.
    eng.submit({"name": "plain", "queue": "q", "replicas": 1, "requests": {
        "cpu": "1", "koordinator.sh/gpu-core": "10", "koordinator.sh/gpu-memory": "8Gi"}})
    eng.start_task("plain", 0, "n1")
    four = shares("four", 4)
    eng.submit({"name": "four", "queue": "q", "replicas": 4, "requests": {"cpu": "1"}})
    set_claims(eng, dra, four)
    result = eng.run_cycle(now=1)
    assert not _binds(result) and "four" in result.pending
    eng.delete("four")
    two = shares("two", 2)
    eng.submit({"name": "two", "queue": "q", "replicas": 2, "requests": {"cpu": "1"}})
    set_claims(eng, dra, two)
    binds = _binds(eng.run_cycle(now=2))
    assert sorted((b["task"], [(d.minor, d.core, d.memory_bytes) for d in b["devices"]]) for b in binds) == [
        (f"two-{i}", [(0, 30, 10 << 30)]) for i in range(2)]
    for _, by_claim in claim_results(eng, dra, two).values():
        [(claim, allocation)] = by_claim.items()
        assert allocation["devices"]["results"][0]["consumedCapacity"] == {"cores": "30", "memory": "10Gi"}
        dra.commit(claim, allocation)
    # Set up again with the two claims committed: 70% is used (the pod's 10, the claims' 60,
    # counted once), so one more 30% share fits and a second does not.
    more = shares("more", 2)
    eng.submit({"name": "more", "queue": "q", "replicas": 2, "min_available": 1, "requests": {"cpu": "1"}})
    set_claims(eng, dra, more)
    binds = _binds(eng.run_cycle(now=3))
    assert [[(d.minor, d.core) for d in b["devices"]] for b in binds] == [[(0, 30)]]


def test_a_deleted_jobs_tasks_forget_their_claims() -> None:
    eng, dra = _setup()
    tasks = _claims(dra, "big", 3)  # three H100s asked, two exist: pending
    eng.submit({"name": "big", "queue": "q", "replicas": 3, "requests": {"cpu": "1"}})
    set_claims(eng, dra, tasks)
    assert "big" in eng.run_cycle(now=1).pending
    # Submitted again under the same name without claims, its tasks are plain pods.
    eng.delete("big")
    eng.submit({"name": "big", "queue": "q", "replicas": 3, "requests": {"cpu": "1"}})
    binds = _binds(eng.run_cycle(now=2))
    assert len(binds) == 3 and all(b["devices"] == [] for b in binds)
    assert claim_results(eng, dra, tasks) == {}
