"""Retried binds after a restart are answered from the journal (a plain bind, or filter then
bind: the pod's own devices do not fill its node), a bind to another node moves the hold, a hold
never answered is confirmed by a retry or released after the hold timeout, and with --kube the
holds follow the API server."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import gpufleet
from gpufleet.k8s.extender import convert
from gpufleet.k8s.extender.binder import MemoryBinder
from gpufleet.k8s.extender.durable import Mark
from gpufleet.k8s.extender.kube import load_kube, reconcile
from gpufleet.k8s.extender.state import ANN_DEVICE_ALLOCATED
from test_extender import FakeCoreV1, _metric, filter_args, gpu, knode, kpod, node
from test_extender_durability import mark_of, start
from test_extender_journal import P, TestClient, bind, create_app, holdings


def test_retried_binds_after_a_restart_are_answered_from_the_journal(tmp_path: Path):
    path = tmp_path / "s.journal"
    nodes = {"nodes": [node("n1", gpus=1), node("n2", gpus=1), node("n3", gpus=1)]}
    st, client = start(path, nodes)
    assert bind(client, "a", "n1") == {"Error": ""} and bind(client, "b", "n2") == {"Error": ""}
    st.journal.close()
    st, client = start(path, nodes)     # the pod cache is empty now
    before = holdings(st)
    # A plain retry (no filter first): the pod is found as the journal holds it.
    out = client.post(f"{P}/bind", json={"PodName": "a", "PodNamespace": "default",
                                         "PodUID": "uid-a", "Node": "n1"}).json()
    assert out == {"Error": ""}
    # Filter, then bind: the pod's node passes although its only GPU is the pod's own.
    f = client.post(f"{P}/filter", json=filter_args(kpod("b", {"nvidia.com/gpu": "1"}),
                                                    ["n1", "n2", "n3"])).json()
    assert f["NodeNames"] == ["n2", "n3"] and "n1" in f["FailedNodes"]
    assert bind(client, "b", "n2") == {"Error": ""}
    assert holdings(st) == before
    # Another pod under the same name (another uid) is not the journalled one.
    out = client.post(f"{P}/bind", json={"PodName": "a", "PodNamespace": "default",
                                         "PodUID": "uid-other", "Node": "n1"}).json()
    assert "uid" in out["Error"] and holdings(st) == before
    # A bind of the same pod to another node moves its hold; one that does not fit keeps it.
    assert "does not fit" in bind(client, "a", "n2")["Error"] and holdings(st) == before
    assert bind(client, "a", "n3") == {"Error": ""}
    assert holdings(st) == {"default/a": ("n3", (0,)), "default/b": ("n2", (0,))}
    st.cluster.check_invariants()
    st.journal.close()
    st, _ = start(path, nodes)
    assert holdings(st) == {"default/a": ("n3", (0,)), "default/b": ("n2", (0,))}
    st.journal.close()


def _unanswered_bind(path: Path, nodes: dict[str, Any]) -> None:
    """Bind `a` and roll the mark back over it: what a crash after the journal's fsync and
    before the mark's leaves (the kill tests do it with the real process)."""
    st, client = start(path, nodes)
    assert bind(client, "a") == {"Error": ""}
    st.journal.close()
    value = Mark.read(mark_of(path))
    Mark.open(mark_of(path), value - 1).close()


def test_a_hold_never_answered_is_confirmed_by_a_retry_or_released_after_the_timeout(
        tmp_path: Path):
    nodes = {"nodes": [node("n1", gpus=1)]}
    path = tmp_path / "s.journal"
    _unanswered_bind(path, nodes)
    st, _ = start(path, nodes)     # a restart before the timeout: still unanswered after it
    st.journal.close()
    st, client = start(path, nodes, hold_timeout_s=0.3)
    assert set(holdings(st)) == {"default/a"}
    assert client.get("/state").json()["journal"]["unanswered"] == 1
    assert _metric(client.get("/metrics").text, "gpufleet_extender_unanswered_holds") == 1
    deadline = time.monotonic() + 10
    while holdings(st) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert holdings(st) == {}, "the unanswered hold was not released"
    st.journal.close()
    st, _ = start(path, nodes)
    assert holdings(st) == {}             # the release was journalled
    st.journal.close()

    path = tmp_path / "t.journal"
    _unanswered_bind(path, nodes)
    st, client = start(path, nodes, hold_timeout_s=0.3)
    assert bind(client, "a") == {"Error": ""}    # filter, then bind: confirmed
    assert client.get("/state").json()["journal"]["unanswered"] == 0
    time.sleep(0.5)
    assert set(holdings(st)) == {"default/a"}
    st.journal.close()
    st, client = start(path, nodes, hold_timeout_s=0.3)
    assert client.get("/state").json()["journal"]["unanswered"] == 0
    st.journal.close()


def test_a_retry_that_cannot_be_confirmed_keeps_the_hold_waiting(tmp_path: Path, monkeypatch):
    """A retried bind of an unanswered hold whose journal record fails is refused, and the hold
    keeps its deadline: it is still released if no later retry confirms it."""
    nodes = {"nodes": [node("n1", gpus=1)]}
    path = tmp_path / "s.journal"
    _unanswered_bind(path, nodes)
    st, client = start(path, nodes, hold_timeout_s=600)
    deadlines, bound_at = dict(st.unanswered), dict(st.bound_at)
    assert set(deadlines) == {"default/a"}

    def disk_full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(st.journal, "record_bind", disk_full)
    assert "No space left" in bind(client, "a")["Error"]
    assert st.unanswered == deadlines and st.bound_at == bound_at
    assert set(holdings(st)) == {"default/a"}
    monkeypatch.undo()
    assert bind(client, "a") == {"Error": ""} and st.unanswered == {}
    st.journal.close()


def test_kube_holds_follow_the_api_server_when_the_pod_is_bound_elsewhere():
    nodes = {"items": [dict(knode(n), metadata={"name": n, "annotations": {
        convert.ANN_DEVICES: json.dumps([gpu(0), gpu(1)])}})
        for n in ("n1", "n2")]}
    api = FakeCoreV1(nodes, {"items": []})
    st, _, _ = load_kube(api, api=gpufleet, binder=MemoryBinder())
    client = TestClient(create_app(st, P))
    pod = kpod("p", {"nvidia.com/gpu": "1"})
    assert bind(client, "p", "n1") == {"Error": ""}
    # The API server says p is bound to n2 with its own annotations (another scheduler's retry
    # won the race, or the pod was re-created): the hold moves there.
    listed = dict(pod, spec=dict(pod["spec"], nodeName="n2"), metadata=dict(
        pod["metadata"], annotations={ANN_DEVICE_ALLOCATED: json.dumps({"gpu": [{
            "minor": 1, "resources": {"koordinator.sh/gpu-core": "100",
                                      "koordinator.sh/gpu-memory": "16Gi",
                                      "koordinator.sh/gpu-memory-ratio": "100"}}]})}))
    out = reconcile(st, [convert.pod_args(listed)], time.time_ns())
    assert out["moved"] == ["default/p"] and out["restored"] == ["default/p"]
    assert holdings(st) == {"default/p": ("n2", (1,))}
    # Not listed bound at all once the hold timeout has passed: released.
    assert reconcile(st, [], time.time_ns() + int(st.hold_timeout_s * 1e9) + 10**9)["released"] \
        == ["default/p"]
    assert holdings(st) == {}
    st.cluster.check_invariants()


def test_a_bind_whose_journal_write_fails_leaves_the_binder_as_it_was(tmp_path: Path,
                                                                        monkeypatch):
    """The scenario binder records a bind before the journal does; when the journal write then
    fails, the bind is refused and the binder's record of the pod is what it was before (none for
    a new pod, the old node for a move)."""
    path = tmp_path / "s.journal"
    st, client = start(path, {"nodes": [node("n1", gpus=2), node("n2", gpus=2)]})
    assert bind(client, "a") == {"Error": ""}
    before = dict(st.binder.records)

    def disk_full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(st.journal, "record_bind", disk_full)
    assert "No space left" in bind(client, "b")["Error"]
    assert "No space left" in bind(client, "a", node_name="n2")["Error"]   # a move
    assert st.binder.records == before and set(holdings(st)) == {"default/a"}
    st.journal.close()
