"""DRA device classes as resources of queue trees: a queue's quota and limit on a resource named
like a DeviceClass (or mapped to one, as Kueue's deviceClassMappings) is charged with the devices
its tasks' claims take (gpufleet.dra.quota), in the engine's admission and reclaim."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gpufleet import queues
from gpufleet.dra import DraCluster
from gpufleet.dra.engine import claim_results, set_claims
from gpufleet.dra.objects import DraError
from gpufleet.dra.quota import claim_devices
from gpufleet.engine import Engine

DATA = Path(__file__).parent / "data" / "queues"
DRIVER = "gpu.example.com"
CLASS = "gpu.nvidia.com"  # the DeviceClass, named as Kueue's users name its resource
KAI = {"actions": "enqueue, allocate, treereclaim",
       "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
                 {"plugins": [{"name": "predicates"}, {"name": "queuetree", "arguments": {"policy": "kai"}},
                              {"name": "nodeorder"}]}]}


def _cluster(config: Any) -> tuple[Engine, DraCluster]:
    """One node with 4 GPUs, published as 4 devices of the class."""
    eng = Engine(config)
    dra = DraCluster()
    dra.apply({"kind": "DeviceClass", "metadata": {"name": CLASS},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    eng.add_node({"name": "n1", "cpu": "64", "memory": "512Gi",
                  "gpus": {"count": 4, "model": "H100", "memory": "80Gi"}})
    dra.add_node("n1")
    dra.apply({"kind": "ResourceSlice", "metadata": {"name": "n1-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{m}", "attributes": {"type": {"string": "gpu"}, "minor": {"int": m}}}
                    for m in range(4)]}})
    return eng, dra


def _jobs(eng: Engine, dra: DraCluster, queue: str, prefix: str, count: int, submit: bool = True
          ) -> dict[str, list[str]]:
    """`count` one-task jobs in `queue`, each task with a claim for one device of the class."""
    tasks = {}
    for i in range(count):
        job = f"{prefix}{i}"
        dra.apply({"kind": "ResourceClaim", "metadata": {"name": job, "namespace": "ml"}, "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}}})
        if submit:
            eng.submit({"name": job, "queue": queue, "replicas": 1, "requests": {"cpu": "1"}})
        tasks[f"{job}-0"] = [f"ml/{job}"]
    return tasks


def _running(eng: Engine) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in eng.jobs().to_dict("records"):
        out[row["queue"]] = out.get(row["queue"], 0) + row["running"]
    return out


def test_a_queue_at_its_class_limit_waits_with_a_reason_naming_the_class() -> None:
    eng, dra = _cluster(KAI)
    eng.load_queues([{"name": "a", "quota": {CLASS: 1}, "limit": {CLASS: 1}},
                     {"name": "b", "quota": {CLASS: 3}}])
    tasks = _jobs(eng, dra, "a", "a", 2) | _jobs(eng, dra, "b", "b", 2)
    set_claims(eng, dra, tasks)
    r = eng.run_cycle(now=1)
    # a holds one device (its limit) though two are free; b holds its two.
    assert sorted(r.binds["job"]) == ["a0", "b0", "b1"]
    assert _running(eng) == {"a": 1, "b": 2}
    assert set(r.pending) == {"a1"}
    assert f"queue a would exceed its {CLASS} limit (1)" in r.pending["a1"]


def test_a_queue_reclaims_its_class_quota_from_a_borrower() -> None:
    eng, dra = _cluster(DATA / "tree-conf.yaml")  # drs: Kueue's rules
    eng.load_queues(DATA / "kueue-dra.yaml")
    b = _jobs(eng, dra, "team-b", "b", 4)
    a = _jobs(eng, dra, "team-a", "a", 3, submit=False)
    set_claims(eng, dra, b | a)
    # team-b borrows team-a's idle quota: all four devices.
    assert len(eng.run_cycle(now=1).binds) == 4
    for job in a:
        eng.submit({"name": job[:-2], "queue": "team-a", "replicas": 1, "requests": {"cpu": "1"}})
    r = eng.run_cycle(now=2)
    # team-a takes back its nominal quota of 2 devices, no more: two of b's tasks are evicted,
    # and a's third task waits (b keeps its own quota of 2).
    assert len(r.evictions) == 2 and set(r.evictions["job"]) <= {j[:-2] for j in b}
    assert sorted(r.binds["job"]) == ["a0", "a1"]
    assert _running(eng) == {"team-a": 2, "team-b": 2}
    assert "queue team-a has no quota left" in r.pending["a2"]
    held = claim_results(eng, dra, a)
    assert sorted(node for node, _ in held.values()) == ["n1", "n1"]


def test_counting_rules_for_all_first_available_and_mappings() -> None:
    def claim(*requests: dict[str, Any]) -> dict[str, Any]:
        return {"spec": {"devices": {"requests": list(requests)}}}
    exact = {"name": "r0", "exactly": {"deviceClassName": CLASS, "count": 2}}
    every = {"name": "r1", "exactly": {"deviceClassName": CLASS, "allocationMode": "All"}}
    admin = {"name": "r2", "exactly": {"deviceClassName": CLASS, "adminAccess": True}}
    alternatives = {"name": "r3", "firstAvailable": [
        {"name": "big", "deviceClassName": CLASS, "count": 4},
        {"name": "small", "deviceClassName": CLASS, "count": 1},
        {"name": "other", "deviceClassName": "nic.example.com"}]}
    most = {CLASS: 8}
    assert claim_devices([claim(exact)], {}, most) == {CLASS: 2}
    assert claim_devices([claim(every)], {}, most) == {CLASS: 8}
    assert claim_devices([claim(admin)], {}, most) == {}
    # Each resource is charged the most one alternative takes of it.
    assert claim_devices([claim(alternatives)], {}, most) == {CLASS: 4, "nic.example.com": 1}
    assert claim_devices([claim(exact), claim(exact)], {CLASS: "whole-gpus"}, most) == {"whole-gpus": 4}
    # A class named like a resource the pods' own requests use is not counted.
    gpu = {"name": "r", "exactly": {"deviceClassName": "gpu"}}
    assert claim_devices([claim(gpu)], {}, most) == {}


def test_mapped_class_names_a_resource_and_bad_mappings_are_refused() -> None:
    eng, dra = _cluster(KAI)
    eng.load_queues([{"name": "a", "quota": {"whole-gpus": 1}, "limit": {"whole-gpus": 1}}])
    tasks = _jobs(eng, dra, "a", "a", 2)
    with pytest.raises(ValueError, match="resource 'gpu' is not a name for claims' devices"):
        set_claims(eng, dra, tasks, {"gpu": [CLASS]})
    set_claims(eng, dra, tasks, {"whole-gpus": [CLASS]})
    r = eng.run_cycle(now=1)
    assert list(r.binds["job"]) == ["a0"]
    assert "queue a would exceed its whole-gpus limit (1)" in r.pending["a1"]
    # Once a0's claim is committed, naming its task again counts what the claim holds.
    for claim, allocation in claim_results(eng, dra, {"a0-0": tasks["a0-0"]})["a0-0"][1].items():
        dra.commit(claim, allocation)
    set_claims(eng, dra, tasks, {"whole-gpus": [CLASS]})
    r = eng.run_cycle(now=2)
    assert r.binds.empty and "whole-gpus limit" in r.pending["a1"]
    # A task's claims are placed together: some allocated and some not is refused.
    with pytest.raises(DraError, match="task x: ResourceClaim ml/a0 is allocated and others are not"):
        set_claims(eng, dra, {"x": ["ml/a0", "ml/a1"]})


def test_kueue_cluster_queues_read_the_class_as_a_resource() -> None:
    specs = queues.read_queue_objects(DATA / "kueue-dra.yaml")
    by_name = {q["name"]: q for q in specs}
    assert by_name["team-a"]["quota"] == {CLASS: 2.0} and by_name["team-a"]["parent"] == "org"
    queues.check_tree(specs)
