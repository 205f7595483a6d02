"""The extender's DRA side against fake API servers: the DRA objects are listed into a
DraCluster (claims' status is the record), a bind allocates the pod's claims on the chosen node
and writes allocation and reservedFor before the Binding, claims kube-scheduler already allocated
are only recorded, and a failed bind takes the claim allocations back."""
from __future__ import annotations

import json
from typing import Any

import pytest

from gpufleet.dra import DraError
from gpufleet.k8s.extender.binder import MemoryBinder
from gpufleet.k8s.extender.dra import DraBinder, DraSync, pod_claims

D = "gpu.example.com"


class _Resp:
    def __init__(self, obj: Any) -> None:
        self.data = json.dumps(obj).encode()


class FakeCore:
    def __init__(self, pods: dict[str, dict]) -> None:
        self.pods = pods

    def list_node(self, _preload_content: bool = True) -> _Resp:
        return _Resp({"items": [{"metadata": {"name": "n1"}}]})

    def read_namespaced_pod(self, name: str, ns: str, _preload_content: bool = True) -> _Resp:
        return _Resp(self.pods[f"{ns}/{name}"])


class FakeResource:
    def __init__(self, claims: list[dict]) -> None:
        self.claims = claims
        self.patches: list[tuple[str, str, dict]] = []
        self.fail = False

    def list_device_class(self, _preload_content: bool = True) -> _Resp:
        return _Resp({"items": [{"metadata": {"name": "gpu"}, "spec": {"selectors": [
            {"cel": {"expression": f'device.driver == "{D}"'}}]}}]})

    def list_resource_slice(self, _preload_content: bool = True) -> _Resp:
        return _Resp({"items": [{"metadata": {"name": "n1-gpus"}, "spec": {
            "driver": D, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(2)]}}]})

    def list_resource_claim_for_all_namespaces(self, _preload_content: bool = True) -> _Resp:
        return _Resp({"items": self.claims})

    def patch_namespaced_resource_claim_status(self, name: str, ns: str, body: dict) -> None:
        if self.fail:
            raise RuntimeError("API server unavailable")
        self.patches.append((ns, name, body))


def _claim(name: str, status: dict | None = None) -> dict:
    c = {"metadata": {"name": name, "namespace": "ml"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}}
    if status:
        c["status"] = status
    return c


def _pod(name: str, claims: list[str]) -> dict:
    return {"metadata": {"name": name, "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": f"r{i}", "resourceClaimName": c} for i, c in enumerate(claims)]}}


def _setup(claims: list[dict], pods: dict[str, dict]) -> tuple[DraSync, DraBinder, MemoryBinder, FakeResource]:
    api = FakeResource(claims)
    core = FakeCore(pods)
    sync = DraSync(core, api)
    sync.sync()
    inner = MemoryBinder()
    binder = DraBinder(inner, sync, lambda ns, n: json.loads(core.read_namespaced_pod(n, ns).data))
    return sync, binder, inner, api


def test_bind_writes_the_claim_allocation_before_the_binding() -> None:
    sync, binder, inner, api = _setup([_claim("a")], {"ml/p": _pod("p", ["a"])})
    binder.bind("ml", "p", "uid-p", "n1", {})
    (ns, name, body), = api.patches
    assert (ns, name) == ("ml", "a")
    assert body["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-p"}]
    assert body["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert inner.records["ml/p"].node == "n1"
    assert sync.cluster.claim("ml/a")["status"]["allocation"] == body["status"]["allocation"]


def test_claims_allocated_by_kube_scheduler_are_recorded_not_rewritten() -> None:
    held = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": D, "pool": "n1", "device": "gpu-1"}]}}}
    sync, binder, inner, api = _setup([_claim("a", held), _claim("b")], {"ml/p": _pod("p", ["a"]),
                                                                        "ml/q": _pod("q", ["b"])})
    binder.bind("ml", "p", "u", "n1", {})
    assert api.patches == [] and "ml/p" in inner.records
    binder.bind("ml", "q", "u2", "n1", {})  # b gets the GPU a does not hold
    assert api.patches[0][2]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_a_failed_bind_gives_the_claims_back() -> None:
    sync, binder, inner, api = _setup([_claim("a")], {"ml/p": _pod("p", ["a"])})
    inner.fail_next = 1
    with pytest.raises(RuntimeError, match="injected binder failure"):
        binder.bind("ml", "p", "u", "n1", {})
    assert api.patches[-1][2] == {"status": {"allocation": None, "reservedFor": None}}
    assert not (sync.cluster.claim("ml/a").get("status") or {}).get("allocation")
    api.fail = True
    with pytest.raises(RuntimeError, match="API server unavailable"):
        binder.bind("ml", "p", "u", "n1", {})
    assert not (sync.cluster.claim("ml/a").get("status") or {}).get("allocation")


def test_unallocatable_claims_refuse_the_bind_and_events_follow_the_server() -> None:
    sync, binder, inner, api = _setup([_claim("a"), _claim("b"), _claim("c")],
                                      {"ml/p": _pod("p", ["a", "b", "c"])})
    with pytest.raises(DraError, match="claims ml/a, ml/b, ml/c on n1: unallocatable"):
        binder.bind("ml", "p", "u", "n1", {})
    assert api.patches == [] and inner.records == {}
    sync.event("ResourceClaim", "DELETED", _claim("c"))
    sync.event("ResourceClaim", "MODIFIED", {**_claim("bad"), "spec": {"devices": {"requests": [{"name": "x"}]}}})
    assert sync.cluster.claim_names() == ["ml/a", "ml/b"]
    binder.read_pod = lambda ns, n: _pod("p", ["a", "b"])
    binder.bind("ml", "p", "u", "n1", {})
    assert len(api.patches) == 2


def test_pod_claims_from_names_and_templates() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ml"},
           "spec": {"resourceClaims": [{"name": "x", "resourceClaimName": "shared"},
                                       {"name": "y", "resourceClaimTemplateName": "t"}]},
           "status": {"resourceClaimStatuses": [{"name": "y", "resourceClaimName": "p-y-abc"}]}}
    assert pod_claims(pod) == ["ml/shared", "ml/p-y-abc"]


def test_dra_needs_kube(capsys, tmp_path) -> None:
    from gpufleet.cli import main
    scenario = tmp_path / "s.yaml"
    scenario.write_text("nodes: []\n")
    assert main(["extender", "--state", str(scenario), "--dra"]) == 2
    assert capsys.readouterr().err.strip() == "gpufleet extender: --dra goes with --kube"


def test_concurrent_binds_never_write_a_device_twice() -> None:
    from concurrent.futures import ThreadPoolExecutor
    names = [f"c{i}" for i in range(8)]
    sync, binder, inner, api = _setup([_claim(n) for n in names],
                                      {f"ml/p{i}": _pod(f"p{i}", [n]) for i, n in enumerate(names)})

    def bind(i: int) -> bool:
        try:
            binder.bind("ml", f"p{i}", f"u{i}", "n1", {})
            return True
        except DraError:
            return False  # the node's two GPUs were taken by other binds

    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(bind, range(8)))
    assert sum(done) == 2 and len(inner.records) == 2
    written = [p[2]["status"]["allocation"]["devices"]["results"][0]["device"] for p in api.patches]
    assert sorted(written) == ["gpu-0", "gpu-1"]


class _TwoNodes(FakeCore):
    def list_node(self, _preload_content: bool = True) -> _Resp:
        return _Resp({"items": [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n2"}}]})


def _kube_pod(name: str, claims: list[str]) -> dict:
    pod = _pod(name, claims)
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["spec"]["containers"] = [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
    return pod


def test_the_filter_passes_only_nodes_where_the_pods_claims_can_be_had() -> None:
    import gpufleet
    from gpufleet.k8s.extender.app import Extender
    from gpufleet.k8s.extender.dra import enable
    from gpufleet.k8s.extender.state import ExtenderState
    on_n1 = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": D, "pool": "n1", "device": "gpu-1"}]},
                            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    state = ExtenderState(api=gpufleet)
    for n in ("n1", "n2", "n3"):
        state.add_node({"name": n, "cpu": "64", "memory": "256Gi"})
    api = FakeResource([_claim("a"), _claim("b"), _claim("held", on_n1)])
    enable(state, _TwoNodes({}), api)
    ext = Extender(state)

    def run(claims: list[str]) -> tuple[list[str], dict[str, str]]:
        out = ext.filter({"Pod": _kube_pod("p", claims), "Nodes": None, "NodeNames": ["n1", "n2", "n3"]})
        return out["NodeNames"], out["FailedNodes"]

    # Only n1 publishes devices (one GPU is held: one claim fits, two do not); n3 has no Node
    # object in the API server's list.
    passed, failed = run(["a"])
    assert passed == ["n1"]
    assert failed["n2"].startswith("claims ml/a: unallocatable:")
    assert failed["n3"] == "node n3 is not known to DRA (no Node object listed)"
    passed, failed = run(["a", "b"])
    assert passed == [] and failed["n1"].startswith("claims ml/a, ml/b: unallocatable:")
    passed, failed = run(["held"])  # allocated: only where its node selector admits
    assert passed == ["n1"]
    assert failed["n2"] == "ResourceClaim ml/held is allocated on devices this node cannot reach"
    passed, failed = run(["missing"])
    assert passed == [] and set(failed.values()) == {"ResourceClaim ml/missing: not found"}
    passed, failed = run([])  # a pod without claims is not the filter's business
    assert passed == ["n1", "n2", "n3"] and failed == {}
    assert api.patches == []  # the filter records nothing
