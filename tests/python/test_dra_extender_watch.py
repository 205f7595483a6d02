"""The extender's DRA side (`--kube --dra`) follows the API server as an informer does: Nodes
added, relabelled or deleted after the start reach the claims (through the extender's node
watch), and a DRA watch that expired or failed is followed by a fresh list that replaces what is
known, so a claim deleted meanwhile gives its GPUs back, and the claims still there are held
exactly once.

The API server is faked as in test_dra_extender_ledger.py, with watch responses: each list call
with watch=True answers the next queued stream (its events, then its end or a failure)."""
from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest

from gpufleet.dra.legacy import PSEUDO_POD_PREFIX
from test_dra_extender import D, _Resp
from test_dra_extender_ledger import (GPUS, Extenders, FakeCore, Resources, api_node, claim, claim_pod,
                                      gpu_pod, minors_of)


class Stream:
    """A watch response: its events (type, object), then its end, or `fail` raised."""

    def __init__(self, events: list[tuple[str, dict]] = (), fail: Exception | None = None) -> None:
        self.events, self.fail = list(events), fail

    def stream(self, amt: Any = None, decode_content: bool = False) -> Any:
        for typ, obj in self.events:
            yield json.dumps({"type": typ, "object": obj}).encode() + b"\n"
        if self.fail is not None:
            raise self.fail

    def release_conn(self) -> None:
        pass


class Gone(Exception):
    """What the official client raises when a watch is asked from an expired version."""
    status = 410


class Watches:
    """Queued watch responses per list call; an exception queued is raised by the call."""

    def queue(self, call: str, *answers: Any) -> None:
        self.__dict__.setdefault("queued", {}).setdefault(call, []).extend(answers)

    def serve(self, call: str, items: list[dict], watch: bool) -> Any:
        if not watch:
            return _Resp({"metadata": {"resourceVersion": "1"}, "items": items})
        queued = self.__dict__.get("queued", {}).get(call) or [Stream()]
        answer = queued.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Core(FakeCore, Watches):
    def list_node(self, watch: bool = False, **_: Any) -> Any:
        return self.serve("list_node", list(self.nodes.values()), watch)


def gpu_slice(node: str) -> dict:
    return {"metadata": {"name": f"{node}-gpus"}, "spec": {
        "driver": D, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, "minor": {"int": i}}}
                    for i in range(GPUS)]}}


class Dra(Resources, Watches):
    """Slices for the nodes named in `slices` (published whether or not the Node is listed)."""

    def __init__(self, claims: list[dict], nodes: tuple[str, ...] = ("n1",)) -> None:
        super().__init__(claims)
        self.slices = [gpu_slice(n) for n in nodes]

    def list_resource_slice(self, watch: bool = False, **_: Any) -> Any:
        return self.serve("list_resource_slice", self.slices, watch)

    def list_device_class(self, watch: bool = False, **_: Any) -> Any:
        return self.serve("list_device_class", json.loads(super().list_device_class().data)["items"], watch)

    def list_resource_claim_for_all_namespaces(self, watch: bool = False, **_: Any) -> Any:
        return self.serve("list_resource_claim_for_all_namespaces", self.claims, watch)


def on(node: str, minors: tuple[int, ...]) -> dict:
    """A claim allocation on `node`'s GPUs, as kube-scheduler writes it."""
    return {"devices": {"results": [{"request": "gpu", "driver": D, "pool": node, "device": f"gpu-{m}"}
                                    for m in minors]}}


def holdings(x: Extenders) -> dict[str, tuple[str, list[int]]]:
    """Every Cluster allocation that holds GPUs: its node and minors."""
    return {a.pod: (a.node, sorted(g.minor for g in a.devices))
            for a in x.state.cluster.allocations() if a.devices}


def filter_nodes(x: Extenders, pod: dict, nodes: list[str]) -> tuple[list[str], dict[str, str]]:
    x.add(pod)
    out = x.ext.filter({"Pod": pod, "Nodes": None, "NodeNames": nodes})
    return out["NodeNames"], out["FailedNodes"]


def bind(x: Extenders, pod: dict, node: str) -> str:
    x.add(pod)
    m = pod["metadata"]
    return anyio.run(x.ext.bind, {"PodName": m["name"], "PodNamespace": m["namespace"],
                                  "PodUID": m["uid"], "Node": node})["Error"]


def test_nodes_added_relabelled_and_deleted_after_the_start_reach_the_claims() -> None:
    core, res = Core(), Dra([claim("a"), claim("b")], nodes=("n1", "n2"))
    zone_a = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    res.claims.append({**claim("z"), "status": {"allocation": {**on("n1", (0,)), "nodeSelector": zone_a}}})
    core.nodes["n1"] = api_node("n1", labels={"zone": "b"})
    x = Extenders(core, res)   # n2 publishes its slice, but its Node is not there yet
    assert x.sync.cluster.claim_names() == ["ml/a", "ml/b", "ml/z"]
    failed: dict[str, str] = {}
    assert x.state.claims_filter.narrow(claim_pod("w", ["a"]), ["n2"], failed) == []
    assert failed["n2"] == "node n2 is not known to DRA (no Node object listed)"

    # The Node appears: the extender's node watch tells the DRA side too.
    core.nodes["n2"] = api_node("n2")
    core.queue("list_node", Stream([("ADDED", core.nodes["n2"])]))
    assert x.watcher.step("nodes") == 0.0
    assert filter_nodes(x, claim_pod("w", ["a"]), ["n2"]) == (["n2"], {})
    assert bind(x, claim_pod("w", ["a"]), "n2") == ""
    assert x.claim_devices("ml/a") == ["gpu-0"]
    assert holdings(x)[f"{PSEUDO_POD_PREFIX}ml/a"] == ("n2", [0])
    # The claim's GPU is not offered to a pod asking for all of n2's.
    assert filter_nodes(x, gpu_pod("all", GPUS), ["n2"])[0] == []

    # A claim's node selector reads the labels as they are now.
    passed, failed = filter_nodes(x, claim_pod("v", ["z"]), ["n1"])
    assert passed == [] and failed["n1"] == "ResourceClaim ml/z is allocated on devices this node cannot reach"
    core.nodes["n1"] = api_node("n1", labels={"zone": "a"})
    core.queue("list_node", Stream([("MODIFIED", core.nodes["n1"])]))
    x.watcher.step("nodes")
    assert filter_nodes(x, claim_pod("v", ["z"]), ["n1"]) == (["n1"], {})

    # Deleted (the event): n2's devices are offered no more, to the filter or a bind.
    gone = core.nodes.pop("n2")
    core.queue("list_node", Stream([("DELETED", gone)]))
    x.watcher.step("nodes")
    failed.clear()
    assert x.state.claims_filter.narrow(claim_pod("u", ["b"]), ["n2"], failed) == []
    assert failed["n2"] == "node n2 is not known to DRA (no Node object listed)"
    with pytest.raises(KeyError, match="Node n2: not found"):
        x.sync.cluster.allocate(["ml/b"], "n2")
    assert f"{PSEUDO_POD_PREFIX}ml/a" not in holdings(x)   # its hold went with the node
    # Back through a re-list: offered again, and the claim allocated there holds its GPU again.
    core.nodes["n2"] = gone
    x.watcher.relist_nodes()
    assert filter_nodes(x, claim_pod("u", ["b"]), ["n2"]) == (["n2"], {})
    assert holdings(x)[f"{PSEUDO_POD_PREFIX}ml/a"] == ("n2", [0])
    # Missing from a re-list (deleted while the node watch was down): gone for DRA as well.
    core.nodes.pop("n2")
    x.watcher.relist_nodes()
    failed.clear()
    assert x.state.claims_filter.narrow(claim_pod("u", ["b"]), ["n2"], failed) == []
    assert "not known to DRA" in failed["n2"]
    x.state.cluster.check_invariants()


@pytest.mark.parametrize("failure", ["dropped connection", "410 event", "410 at the start"])
def test_a_claim_deleted_while_the_watch_was_down_gives_its_gpu_back(failure: str, caplog) -> None:
    core, res = Core(), Dra([claim("a", 2, (0, 1)), claim("old", 1, (3,))])
    core.pods["default/p"] = gpu_pod("p", 1, "n1", (2,))
    x = Extenders(core, res)
    assert holdings(x) == {f"{PSEUDO_POD_PREFIX}ml/a": ("n1", [0, 1]), "default/p": ("n1", [2]),
                           f"{PSEUDO_POD_PREFIX}ml/old": ("n1", [3])}
    assert not x.passes(gpu_pod("q", 1))   # every GPU is held
    res.claims.pop()                       # deleted; the watch never says so
    call = "list_resource_claim_for_all_namespaces"
    res.queue(call, {"dropped connection": Stream(fail=ConnectionResetError("peer reset")),
                     "410 event": Stream([("ERROR", {"kind": "Status", "code": 410,
                                                     "message": "too old resource version"})]),
                     "410 at the start": Gone("Expired")}[failure])
    with caplog.at_level(logging.INFO, logger="gpufleet.k8s.extender.dra"):
        x.sync.loops.step("ResourceClaim")   # the watch ends badly
        x.sync.loops.step("ResourceClaim")   # a fresh list, then the watch again
    why = "watch failed: ConnectionResetError" if failure == "dropped connection" else "watch expired"
    assert f"re-list of ResourceClaim ({why}): 1 listed, 1 (ml/old) gone, 0 new or changed" in caplog.text
    assert holdings(x) == {f"{PSEUDO_POD_PREFIX}ml/a": ("n1", [0, 1]), "default/p": ("n1", [2])}
    assert x.sync.cluster.claim_names() == ["ml/a"]
    assert x.passes(gpu_pod("q", 1)) and x.bind(gpu_pod("q", 1)) == ""
    assert minors_of(core.pods["default/q"]) == [3]
    x.state.cluster.check_invariants()


def test_a_relist_while_claims_remain_keeps_each_hold_exactly_once(caplog) -> None:
    core, res = Core(), Dra([claim("a", 1, (0,)), claim("b")])
    x = Extenders(core, res)
    assert x.bind(claim_pod("w", ["b"])) == ""       # written by this extender
    assert x.bind(gpu_pod("p", 1)) == ""
    before = holdings(x)
    assert sorted(before) == ["default/p", f"{PSEUDO_POD_PREFIX}ml/a", f"{PSEUDO_POD_PREFIX}ml/b"]

    def claim_holds() -> list[str]:
        return sorted(a.pod for a in x.state.cluster.allocations() if a.pod.startswith(PSEUDO_POD_PREFIX))

    # The claim status this extender wrote comes back through the list (its watch event was
    # missed): the DraCluster is replaced, the holds are the same, once each.
    with caplog.at_level(logging.INFO, logger="gpufleet.k8s.extender.dra"):
        x.sync.relist("ResourceClaim", "watch expired")
    assert "re-list of ResourceClaim (watch expired): 2 listed, 0 gone, 1 (ml/b) new or changed" in caplog.text
    assert holdings(x) == before and claim_holds() == [f"{PSEUDO_POD_PREFIX}ml/a", f"{PSEUDO_POD_PREFIX}ml/b"]
    for kind in ("ResourceClaim", "ResourceSlice", "DeviceClass"):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="gpufleet.k8s.extender.dra"):
            x.sync.relist(kind, "resync")
        assert f"re-list of {kind} (resync): " in caplog.text and "listed, nothing changed" in caplog.text
        assert holdings(x) == before and claim_holds() == [f"{PSEUDO_POD_PREFIX}ml/a", f"{PSEUDO_POD_PREFIX}ml/b"]
    # A claim allocated elsewhere and one changed while the watches were down: the re-list
    # replaces the DraCluster, and every claim still there is held once.
    free = sorted(set(range(GPUS)) - {m for _, ms in before.values() for m in ms})
    assert len(free) == 1
    res.claims.append(claim("c", 1, tuple(free)))
    res.slices[0]["metadata"]["resourceVersion"] = "7"
    for kind, name in (("ResourceClaim", "ml/c"), ("ResourceSlice", "n1-gpus")):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="gpufleet.k8s.extender.dra"):
            x.sync.relist(kind, "resync")
        assert f"re-list of {kind} (resync): " in caplog.text and f"0 gone, 1 ({name}) new or changed" in caplog.text
        assert holdings(x) == {**before, f"{PSEUDO_POD_PREFIX}ml/c": ("n1", free)}
        assert claim_holds() == [f"{PSEUDO_POD_PREFIX}ml/{c}" for c in ("a", "b", "c")]
    assert not x.passes(gpu_pod("q", 1))
    x.state.cluster.check_invariants()


def test_a_relist_that_predates_this_extenders_own_claim_write_keeps_it() -> None:
    core, res = Core(), Dra([claim("a"), claim("b", 1, (3,))])
    x = Extenders(core, res)
    listed_before = json.loads(json.dumps(res.claims))
    assert x.bind(claim_pod("w", ["a"])) == ""
    held = holdings(x)[f"{PSEUDO_POD_PREFIX}ml/a"]
    # The list was answered before the status write landed, and shows b gone meanwhile.
    res.claims = [c for c in listed_before if c["metadata"]["name"] == "a"]
    x.sync.relist("ResourceClaim", "watch expired")
    assert holdings(x) == {f"{PSEUDO_POD_PREFIX}ml/a": held}
    assert x.claim_devices("ml/a") == [f"gpu-{held[1][0]}"]
    # The server's own word comes next (the watch): a claim it shows deallocated is released.
    res.claims = listed_before[:1]
    x.sync.event("ResourceClaim", "MODIFIED", res.claims[0])
    assert holdings(x) == {}
    x.sync.relist("ResourceClaim", "resync")
    assert holdings(x) == {} and x.sync.cluster.claim_names() == ["ml/a"]


def test_claims_that_swapped_gpus_while_the_watch_was_down_are_both_held(caplog) -> None:
    """A claims re-list takes only the claims gone or changed, in place: two that swapped GPUs
    are both held on their new ones (the old holds are given back first), the others untouched."""
    res = Dra([claim("a", 1, (0,)), claim("b", 1, (1,)), claim("c", 1, (2,))])
    x = Extenders(Core(), res)
    hold = {n: f"{PSEUDO_POD_PREFIX}ml/{n}" for n in "abc"}
    assert holdings(x) == {hold["a"]: ("n1", [0]), hold["b"]: ("n1", [1]), hold["c"]: ("n1", [2])}
    res.claims[:2] = [claim("a", 1, (1,)), claim("b", 1, (0,))]
    for c in res.claims[:2]:
        c["metadata"]["resourceVersion"] = "9"
    with caplog.at_level(logging.INFO, logger="gpufleet.k8s.extender.dra"):
        x.sync.relist("ResourceClaim", "watch expired")
    assert "3 listed, 0 gone, 2 (ml/a, ml/b) new or changed" in caplog.text
    assert holdings(x) == {hold["a"]: ("n1", [1]), hold["b"]: ("n1", [0]), hold["c"]: ("n1", [2])}
    assert not x.sync.conflicts
    x.state.cluster.check_invariants()
