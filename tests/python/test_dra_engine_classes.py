"""Pods with claims are placed by node classes (cpp/gpufleet/engine/dra_node_classes.h): nodes
alike in the accounting and in what the DRA ledger keeps for them are asked once. The choices must
be exactly those of asking every node, which a Python predicate that accepts every node forces
(the engine cannot class nodes for a plugin that sees node names). Random clusters mix nodes of
one spec but different slices (a NIC or not, another model attribute), nodes without slices,
GPUs held by plain pods, claims committed in an earlier cycle, and claims that take a NIC, which
has no counterpart in the accounting: only the ledger tells such nodes apart (one case is built
to show it)."""
from __future__ import annotations

import random
from typing import Any

from gpufleet.dra import DraCluster
from gpufleet.dra.engine import claim_results, set_claims
from gpufleet.engine import Engine, default_config, register_plugin

DRIVER = "gpu.example.com"


class AcceptsEveryNode:
    def predicate(self, task: Any, node: str) -> None:
        return None


_CLASSES = [{"kind": "DeviceClass", "metadata": {"name": kind}, "spec": {"selectors": [{"cel": {"expression":
    f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "{kind}"'}}]}} for kind in ("gpu", "nic")]


def _slice(node: str, gpus: int, nics: int, model: str = "H100") -> dict[str, Any]:
    devices = [{"name": f"gpu-{m}", "attributes": {"type": {"string": "gpu"}, "minor": {"int": m},
                                                   "model": {"string": model}}} for m in range(gpus)]
    devices += [{"name": f"nic-{k}", "attributes": {"type": {"string": "nic"}}} for k in range(nics)]
    return {"kind": "ResourceSlice", "metadata": {"name": f"{node}-devices"}, "spec": {
        "driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": devices}}


def _cluster(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Engine node specs and the DRA objects of a random cluster."""
    nodes, objects = [], list(_CLASSES)
    for n in range(rng.randint(6, 12)):
        name, gpus, model = f"n{n:02d}", rng.choice([2, 4]), rng.choice(["A100", "H100"])
        nodes.append({"name": name, "cpu": "64", "memory": "512Gi",
                      "gpus": {"count": gpus, "model": model, "memory": "80Gi"}})
        if rng.random() < 0.15:
            continue  # no slice: claims fit nowhere there
        objects.append(_slice(name, gpus, rng.choice([0, 1, 1, 2]), model if rng.random() < 0.8 else "L40"))
    return nodes, objects


def _claim(name: str, rng: random.Random, gpus: int | None = None, nic: bool | None = None) -> dict[str, Any]:
    count = rng.choice([1, 1, 2]) if gpus is None else gpus
    requests: list[dict[str, Any]] = [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]
    if gpus is None and rng.random() < 0.5:
        requests[0]["exactly"]["selectors"] = [{"cel": {"expression":
            f'device.attributes["{DRIVER}"].model == "{rng.choice(["A100", "H100"])}"'}}]
    wants_nic = rng.random() < 0.4 if nic is None else nic
    if wants_nic:
        requests.append({"name": "nic", "exactly": {"deviceClassName": "nic"}})
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": requests}}}


def _engine(every_node: bool) -> Engine:
    """The default configuration, or with a Python predicate, which makes the engine ask every node."""
    register_plugin("test-accepts-every-node", AcceptsEveryNode)
    conf = default_config()
    if every_node:
        conf["tiers"][-1]["plugins"].append({"name": "test-accepts-every-node"})
    eng = Engine(conf)
    eng.add_queue("q", weight=1)
    return eng


def _run(seed: int, every_node: bool) -> list[Any]:
    """Two cycles of random gangs with claims beside plain pods; what each decided."""
    rng = random.Random(seed)
    nodes, objects = _cluster(rng)
    eng, dra = _engine(every_node), DraCluster()
    for spec in nodes:
        eng.add_node(spec)
        dra.add_node(spec["name"])
    for obj in objects:
        dra.apply(obj)
    strategy = rng.choice(["pack", "first"])
    for p, spec in enumerate(rng.sample(nodes, rng.randint(0, 4))):  # plain pods: GPUs in use for claims
        eng.submit({"name": f"pod{p}", "queue": "q", "replicas": 1, "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
        eng.start_task(f"pod{p}", 0, spec["name"])
    out: list[Any] = []
    tasks: dict[str, list[str]] = {}
    for cycle in (1, 2):
        for j in range(rng.randint(4, 10)):
            job, replicas = f"c{cycle}j{j}", rng.randint(1, 4)
            if rng.random() < 0.2:
                eng.submit({"name": job, "queue": "q", "replicas": replicas,
                            "requests": {"cpu": "2", "nvidia.com/gpu": rng.choice([1, 2])}})
                continue
            eng.submit({"name": job, "queue": "q", "replicas": replicas,
                        "min_available": rng.randint(1, replicas), "requests": {"cpu": "1"}})
            for k in range(replicas):
                dra.apply(_claim(f"{job}-{k}", rng))
                tasks[f"{job}-{k}"] = [f"ml/{job}-{k}"]
        set_claims(eng, dra, tasks, strategy=strategy)
        result = eng.run_cycle(now=cycle)
        out += sorted(("bind", b["task"], b["node"], [(d.minor, d.core) for d in b["devices"]])
                      for b in result.binds.to_dict("records"))
        out += sorted(("pending", job, why) for job, why in result.pending.items())
        # Commit the placed tasks' claims: the next cycle starts from what they hold.
        for task, (node, by_claim) in sorted(claim_results(eng, dra, tasks).items()):
            out.append(("claims", task, node, sorted((c, [r["device"] for r in a["devices"]["results"]])
                                           for c, a in by_claim.items())))
            for claim, allocation in by_claim.items():
                dra.commit(claim, allocation)
    return out


def test_a_nic_held_by_a_claim_tells_nodes_alike_in_the_accounting_apart() -> None:
    rng = random.Random(0)
    places = []
    for every_node in (False, True):
        eng, dra = _engine(every_node), DraCluster()
        for node in ("n1", "n2"):
            eng.add_node({"name": node, "cpu": "64", "memory": "512Gi",
                          "gpus": {"count": 2, "model": "H100", "memory": "80Gi"}})
            dra.add_node(node)
        for obj in _CLASSES + [_slice("n1", 2, 1), _slice("n2", 2, 1)]:
            dra.apply(obj)
        # An earlier claim holds n1's NIC (and a GPU the accounting does not see: no pod runs).
        dra.apply(_claim("old", rng, gpus=1, nic=True))
        outcome = dra.allocate(["ml/old"], "n1")
        dra.commit("ml/old", outcome.results[0])
        dra.apply(_claim("new-0", rng, gpus=1, nic=True))
        eng.submit({"name": "new", "queue": "q", "replicas": 1, "requests": {"cpu": "1"}})
        set_claims(eng, dra, {"new-0": ["ml/new-0"]})
        places.append([(b["task"], b["node"]) for b in eng.run_cycle(now=1).binds.to_dict("records")])
    assert places[0] == places[1] == [("new-0", "n2")]


def test_node_classes_place_claims_exactly_as_asking_every_node() -> None:
    placed = refused = 0
    for seed in range(12):
        classed = _run(seed, every_node=False)
        assert classed == _run(seed, every_node=True), f"seed {seed}"
        placed += sum(row[0] == "claims" for row in classed)
        refused += sum(row[0] == "pending" and "claims" in row[2] for row in classed)
    assert placed > 50 and refused > 0  # claims were placed, and refused somewhere
