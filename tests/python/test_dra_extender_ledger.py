"""One ledger behind the extender's DRA mode (`--kube --dra`): a GPU a ResourceClaim holds is not
offered to pods asking through nvidia.com/gpu and the reverse, in the filter and at bind; the pod
re-list, node changes and a restart keep both held exactly once; and a device that a bound pod's
annotations and a claim's status both name is logged and counted, with both kept held.

The API server is faked as in test_dra_extender.py (its resource API, with claim status patches
kept), plus the core calls of the pod list and a binder that writes annotations and nodeName."""
from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import gpufleet
from gpufleet.dra.legacy import PSEUDO_POD_PREFIX
from gpufleet.k8s.extender import convert
from gpufleet.k8s.extender.app import Extender
from gpufleet.k8s.extender.dra import enable
from gpufleet.k8s.extender.kube import KubeWatcher, load_kube
from gpufleet.k8s.extender.state import ANN_DEVICE_ALLOCATED
from test_dra_extender import D, FakeResource, _Resp
from test_extender import gpu, kpod

GPUS = 4


def api_node(name: str = "n1", labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}, "annotations": {
                convert.ANN_DEVICES: json.dumps([gpu(i) for i in range(GPUS)])}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}


class FakeCore:
    """Nodes and pods as the API server has them: list (bound, unfinished pods), read, and the
    writes of a bind (annotations, nodeName)."""

    def __init__(self) -> None:
        self.nodes = {"n1": api_node()}
        self.pods: dict[str, dict] = {}

    def list_node(self, _preload_content: bool = True, **_: Any) -> _Resp:
        return _Resp({"metadata": {"resourceVersion": "1"}, "items": list(self.nodes.values())})

    def list_pod_for_all_namespaces(self, field_selector: str = "", _preload_content: bool = True,
                                    **_: Any) -> _Resp:
        items = [p for p in self.pods.values() if p["spec"].get("nodeName")
                 and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        return _Resp({"metadata": {"resourceVersion": "1"}, "items": items})

    def read_namespaced_pod(self, name: str, ns: str, _preload_content: bool = True) -> _Resp:
        return _Resp(self.pods[f"{ns}/{name}"])


class PodBinder:
    """What KubeBinder does, on FakeCore: annotations first, then the Binding."""
    blocking = False

    def __init__(self, core: FakeCore) -> None:
        self.core = core

    def bind(self, namespace: str, name: str, uid: str, node: str, annotations: dict) -> None:
        pod = self.core.pods[f"{namespace}/{name}"]
        pod["metadata"].setdefault("annotations", {}).update(annotations)
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running"}


class Resources(FakeResource):
    """The DRA objects; a claim status patch is kept, as the API server keeps it."""

    def list_device_class(self, _preload_content: bool = True) -> _Resp:
        return _Resp({"items": [{"metadata": {"name": "gpu"}, "spec": {"selectors": [
            {"cel": {"expression": f'device.driver == "{D}"'}}]}}]})

    def list_resource_slice(self, _preload_content: bool = True) -> _Resp:
        # What NVIDIA's DRA driver publishes: whole GPUs with their minor, mapped onto the
        # node's devices (gpufleet/dra/legacy.py).
        return _Resp({"items": [{"metadata": {"name": "n1-gpus"}, "spec": {
            "driver": D, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, "minor": {"int": i}}}
                        for i in range(GPUS)]}}]})

    def patch_namespaced_resource_claim_status(self, name: str, ns: str, body: dict) -> None:
        super().patch_namespaced_resource_claim_status(name, ns, body)
        for c in self.claims:
            if (c["metadata"]["namespace"], c["metadata"]["name"]) == (ns, name):
                status = {k: v for k, v in body["status"].items() if v is not None}
                c["status"] = status
                if not status:
                    del c["status"]


def claim(name: str, count: int = 1, minors: tuple[int, ...] = ()) -> dict:
    c = {"metadata": {"name": name, "namespace": "ml"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}}]}}}
    if minors:  # allocated, as kube-scheduler's DRA plugin writes it
        c["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": D, "pool": "n1", "device": f"gpu-{m}"} for m in minors]}}}
    return c


def gpu_pod(name: str, gpus: int, node: str = "", minors: tuple[int, ...] = ()) -> dict:
    """A pod asking for whole GPUs through nvidia.com/gpu; bound on `minors` if given."""
    ann = {}
    if minors:
        ann[ANN_DEVICE_ALLOCATED] = json.dumps({"gpu": [{"minor": m, "resources": {
            "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "16Gi",
            "koordinator.sh/gpu-memory-ratio": "100"}} for m in minors]})
    pod = kpod(name, {"nvidia.com/gpu": str(gpus)}, annotations=ann)
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running" if node else "Pending"}
    return pod


def claim_pod(name: str, claims: list[str]) -> dict:
    pod = kpod(name, {"cpu": "1"}, ns="ml")
    pod["spec"]["resourceClaims"] = [{"name": f"r{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    return pod


class Extenders:
    """An extender in --kube --dra mode on the fake API server; `restart()` is a new process."""

    def __init__(self, core: FakeCore, res: Resources) -> None:
        self.core, self.res = core, res
        self.restart()

    def restart(self) -> None:
        self.state, self.report, self.watcher = load_kube(self.core, api=gpufleet,
                                                          binder=PodBinder(self.core))
        self.sync = enable(self.state, self.core, self.res)
        self.ext = Extender(self.state)

    def add(self, pod: dict) -> None:
        m = pod["metadata"]
        self.core.pods[f"{m['namespace']}/{m['name']}"] = pod

    def passes(self, pod: dict) -> bool:
        self.add(pod)
        out = self.ext.filter({"Pod": pod, "Nodes": None, "NodeNames": ["n1"]})
        return out["NodeNames"] == ["n1"]

    def bind(self, pod: dict) -> str:
        self.add(pod)
        m = pod["metadata"]
        return anyio.run(self.ext.bind, {"PodName": m["name"], "PodNamespace": m["namespace"],
                                         "PodUID": m["uid"], "Node": "n1"})["Error"]

    def holdings(self) -> dict[str, list[int]]:
        """Every Cluster allocation (pods' and claims') that holds GPUs: their minors on n1."""
        out: dict[str, list[int]] = {}
        for a in self.state.cluster.allocations():
            assert a.node == "n1" and a.state == "Bound"
            if a.devices:   # a claim pod's own allocation (its CPU) holds none
                out[a.pod] = sorted(g.minor for g in a.devices)
        return out

    def claim_devices(self, name: str) -> list[str]:
        alloc = (self.sync.cluster.claim(name).get("status") or {}).get("allocation") or {}
        return sorted(r["device"] for r in (alloc.get("devices") or {}).get("results") or [])


def minors_of(pod: dict) -> list[int]:
    return sorted(g["minor"] for g in json.loads(pod["metadata"]["annotations"][ANN_DEVICE_ALLOCATED])["gpu"])


def test_a_gpu_a_claim_holds_is_not_offered_to_an_nvidia_gpu_pod() -> None:
    core, res = FakeCore(), Resources([claim("a", 2, (0, 1))])
    x = Extenders(core, res)
    assert x.holdings() == {f"{PSEUDO_POD_PREFIX}ml/a": [0, 1]}
    assert not x.passes(gpu_pod("all", GPUS))   # only 2 of the 4 GPUs are free
    assert "does not fit" in x.bind(gpu_pod("all", GPUS))
    assert x.passes(gpu_pod("two", 2))
    assert x.bind(gpu_pod("two", 2)) == ""
    assert minors_of(core.pods["default/two"]) == [2, 3]
    assert x.holdings() == {f"{PSEUDO_POD_PREFIX}ml/a": [0, 1], "default/two": [2, 3]}
    x.state.cluster.check_invariants()


def test_gpus_pods_hold_are_not_given_to_a_claim() -> None:
    core, res = FakeCore(), Resources([claim("one"), claim("two", 2)])
    core.pods["default/p"] = gpu_pod("p", 2, "n1", (0, 2))   # bound before the start
    x = Extenders(core, res)
    assert x.bind(gpu_pod("q", 1)) == ""                      # bound by this extender
    taken = [0, 2] + minors_of(core.pods["default/q"])
    free = [m for m in range(GPUS) if m not in taken]
    assert len(free) == 1
    assert not x.passes(claim_pod("w2", ["two"]))            # two GPUs asked, one free
    assert x.passes(claim_pod("w1", ["one"]))
    assert x.bind(claim_pod("w1", ["one"])) == ""
    assert x.claim_devices("ml/one") == [f"gpu-{free[0]}"]
    (_, name, body), = res.patches
    assert name == "one" and body["status"]["allocation"]["devices"]["results"][0]["device"] == f"gpu-{free[0]}"
    assert x.holdings()[f"{PSEUDO_POD_PREFIX}ml/one"] == free
    # Every GPU is held now: a further claim is refused at filter and at bind.
    res.claims.append(claim("three"))
    x.sync.event("ResourceClaim", "ADDED", claim("three"))
    assert not x.passes(claim_pod("w3", ["three"]))
    assert "bind of ml/w3 to n1 failed" in x.bind(claim_pod("w3", ["three"]))
    assert "ml/three" not in [p[1] for p in res.patches]


def test_pod_relist_node_changes_and_a_dra_relist_keep_each_hold_exactly_once() -> None:
    core, res = FakeCore(), Resources([claim("a", 2, (0, 1)), claim("old", 1, (3,))])
    core.pods["default/p"] = gpu_pod("p", 1, "n1", (2,))
    x = Extenders(core, res)
    expected = {f"{PSEUDO_POD_PREFIX}ml/a": [0, 1], "default/p": [2], f"{PSEUDO_POD_PREFIX}ml/old": [3]}
    assert x.holdings() == expected
    watcher = KubeWatcher(x.state, core)
    watcher.relist_pods()          # the resync: claims' holds are not pods the server lists
    assert x.holdings() == expected
    watcher.relist_nodes()
    assert x.holdings() == expected
    # A node that changes is rebuilt: its pods from annotations, then its claims from status.
    core.nodes["n1"] = api_node(labels={"zone": "b"})
    watcher.relist_nodes()
    assert x.state.cluster.node("n1")["labels"] == {"zone": "b"}
    assert x.holdings() == expected
    # A node that goes away and comes back: its claims hold their GPUs again.
    gone = core.nodes.pop("n1")
    watcher.relist_nodes()
    assert x.holdings() == {}
    core.nodes["n1"] = gone
    watcher.relist_nodes()
    watcher.relist_pods()
    assert x.holdings() == expected
    x.sync.sync()                  # the DRA objects listed again: replaced, not doubled
    assert x.holdings() == expected
    res.claims.pop()               # deleted while no watch saw it: the next list drops its hold
    x.sync.sync()
    del expected[f"{PSEUDO_POD_PREFIX}ml/old"]
    assert x.holdings() == expected
    assert x.claim_devices("ml/a") == ["gpu-0", "gpu-1"]
    assert not x.passes(gpu_pod("r", 2)) and x.passes(gpu_pod("r", 1))
    x.state.cluster.check_invariants()


def test_a_restart_rebuilds_the_same_ledger_from_claim_status_and_annotations() -> None:
    core, res = FakeCore(), Resources([claim("a", 2), claim("b")])
    x = Extenders(core, res)
    assert x.bind(claim_pod("w", ["a"])) == ""
    assert x.bind(gpu_pod("p", 1)) == ""
    before = x.holdings()
    assert sorted(before) == ["default/p", f"{PSEUDO_POD_PREFIX}ml/a"]
    assert len({m for ms in before.values() for m in ms}) == 3
    claimed = x.claim_devices("ml/a")
    x.restart()                    # a new process: only the API server's objects are known
    assert x.holdings() == before and sorted(x.report.restored) == ["default/p", "ml/w"]
    assert x.claim_devices("ml/a") == claimed and x.sync.conflicts == {}
    # The last GPU goes to one of them only.
    assert x.bind(claim_pod("v", ["b"])) == ""
    assert not x.passes(gpu_pod("q", 1))
    free = sorted(set(range(GPUS)) - {m for ms in before.values() for m in ms})
    assert x.holdings()[f"{PSEUDO_POD_PREFIX}ml/b"] == free


def test_a_device_both_a_pod_and_a_claim_name_is_reported_and_both_stay_held(caplog) -> None:
    from gpufleet.k8s.extender.metrics import ExtenderMetrics
    core, res = FakeCore(), Resources([claim("a", 2, (0, 1))])
    core.pods["default/p"] = gpu_pod("p", 1, "n1", (0,))   # GPU 0 in both records
    with caplog.at_level(logging.WARNING, logger="gpufleet.k8s.extender.dra"):
        x = Extenders(core, res)   # pods first, then claims
    assert "conflict: ResourceClaim ml/a" in caplog.text
    assert list(x.sync.conflicts) == ["ml/a"] and list(x.state.usage()["claim_conflicts"]) == ["ml/a"]
    assert b"gpufleet_extender_claim_conflicts 1.0" in ExtenderMetrics(x.state).render()[0]
    # The pod keeps GPU 0, the claim its status and the rest of its GPUs.
    assert x.holdings() == {"default/p": [0], f"{PSEUDO_POD_PREFIX}ml/a": [1]}
    assert x.claim_devices("ml/a") == ["gpu-0", "gpu-1"]
    assert x.bind(gpu_pod("q", 2)) == "" and minors_of(core.pods["default/q"]) == [2, 3]
    # Gone, the pod leaves GPU 0 to the claim, which holds all it names again.
    x.watcher._pod_event("DELETED", core.pods.pop("default/p"))
    assert x.holdings() == {"default/q": [2, 3], f"{PSEUDO_POD_PREFIX}ml/a": [0, 1]}
    assert x.sync.conflicts == {}

    # The reverse order: the claim held first, then a bound pod naming its GPU is seen.
    core, res = FakeCore(), Resources([claim("a", 2, (0, 1))])
    x = Extenders(core, res)
    assert x.holdings() == {f"{PSEUDO_POD_PREFIX}ml/a": [0, 1]}
    core.pods["default/p"] = gpu_pod("p", 1, "n1", (1,))
    x.watcher._pod_event("ADDED", core.pods["default/p"])
    assert x.holdings() == {"default/p": [1], f"{PSEUDO_POD_PREFIX}ml/a": [0]}
    assert list(x.sync.conflicts) == ["ml/a"]
    assert not x.passes(gpu_pod("r", 3)) and x.passes(gpu_pod("r", 2))
    x.state.cluster.check_invariants()
    assert all(a.pod.startswith(PSEUDO_POD_PREFIX) or a.pod == "default/p" for a in x.state.cluster.allocations())


def test_concurrent_claim_and_nvidia_gpu_binds_never_share_a_gpu() -> None:
    from concurrent.futures import ThreadPoolExecutor
    core, res = FakeCore(), Resources([claim(f"c{i}") for i in range(GPUS)])
    x = Extenders(core, res)
    pods = [claim_pod(f"w{i}", [f"c{i // 2}"]) if i % 2 else gpu_pod(f"p{i}", 1) for i in range(2 * GPUS)]
    for pod in pods:
        x.add(pod)
    with ThreadPoolExecutor(max_workers=len(pods)) as pool:
        errors = list(pool.map(x.bind, pods))
    assert sum(e == "" for e in errors) == GPUS   # one GPU each, whichever asked first
    held = [m for ms in x.holdings().values() for m in ms]
    assert sorted(held) == list(range(GPUS))
    x.state.cluster.check_invariants()


def test_the_claims_filter_answers_as_each_node_would_with_pods_and_claims_about() -> None:
    """allocatable() shares answers between alike nodes only where the Cluster has no usage."""
    from gpufleet.dra.cluster import DraCluster
    cl = gpufleet.Cluster()
    c = DraCluster(cluster=cl)
    c.apply({"kind": "DeviceClass", **json.loads(Resources([]).list_device_class().data)["items"][0]})
    nodes = [f"n{i}" for i in range(6)]
    for n in nodes:
        cl.add_node({"name": n, "cpu": "64", "memory": "256Gi", "gpus": {"count": 2, "model": "H100", "memory": "80Gi"}})
        c.add_node(n)
        sl = json.loads(Resources([]).list_resource_slice().data)["items"][0]
        sl["metadata"]["name"] = f"{n}-gpus"
        sl["spec"].update(nodeName=n, pool={"name": n, "generation": 1, "resourceSliceCount": 1})
        sl["spec"]["devices"] = sl["spec"]["devices"][:2]
        c.apply({"kind": "ResourceSlice", **sl})
    for i in (1, 4):   # a pod on one GPU of n1 and n4, both of n5
        cl.reserve(gpufleet.Pod.from_dict({"name": f"p{i}", "requests": {"nvidia.com/gpu": 1}}), f"n{i}", "binpack")
        cl.commit(f"p{i}")
    cl.reserve(gpufleet.Pod.from_dict({"name": "p5", "requests": {"nvidia.com/gpu": 2}}), "n5", "binpack")
    cl.commit("p5")
    held = claim("held")
    held["status"] = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": D, "pool": "n2", "device": "gpu-0"}]}}}
    for obj in (held, claim("one"), claim("two", 2)):
        c.apply({"kind": "ResourceClaim", **obj})
    for names in (["ml/one"], ["ml/two"]):
        want = {n: c.allocate(names, n) for n in nodes}
        assert c.allocatable(names, nodes) == {n: "" if o.ok else f"{o.verdict}: {o.reason}" for n, o in want.items()}
    assert [n for n, why in c.allocatable(["ml/two"], nodes).items() if not why] == ["n0", "n3"]
    assert [n for n, why in c.allocatable(["ml/one"], nodes).items() if not why] == ["n0", "n1", "n2", "n3", "n4"]
