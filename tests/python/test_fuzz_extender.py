"""The hostile-input probe as a campaign over the extender's HTTP verbs (filter, prioritize, bind,
preempt, release) through the public app: bodies made from valid ones by mutation, as data (a
value swapped for another type, a huge number, a key dropped or added) and as bytes (cut,
repeated, inserted). Every answer is JSON with a status the protocol allows (200, or 400 where a
verb's result has no Error field), never a 500 or an internal error; a refusal leaves the cluster
as it was (the cluster's snapshot, assume times included, the binder's records, the extender's
holds, bind times, retry deadlines and journal), and filter, prioritize and preempt never change
it. Settings: tests/fuzz/README.md."""
from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any, Iterator

from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

import gpufleet
from fuzz_support import campaign, mutated_document, time_limit
from gpufleet.k8s.extender.app import create_app
from gpufleet.k8s.extender.binder import MemoryBinder
from gpufleet.k8s.extender.journal import Journal
from gpufleet.k8s.extender.state import ExtenderState, state_from_scenario
from test_extender import kpod, node

P = "/gpufleet"
POD = kpod("p", {"nvidia.com/gpu": "1", "cpu": "1"}, uid="uid-p")
SHARED = kpod("s", {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"},
              uid="uid-s")
BODIES: dict[str, list[dict[str, Any]]] = {
    "filter": [{"Pod": POD, "Nodes": None, "NodeNames": ["n1", "n2"]},
               {"Pod": SHARED, "NodeNames": ["n2", "n9"]}],
    "prioritize": [{"Pod": POD, "NodeNames": ["n1", "n2"]}, {"Pod": SHARED, "NodeNames": ["n1"]}],
    "bind": [{"PodName": "p", "PodNamespace": "default", "PodUID": "uid-p", "Node": "n1"},
             {"PodName": "s", "PodNamespace": "default", "PodUID": "uid-s", "Node": "n2"},
             # a bound pod: a bind to another node moves its hold (scenario mode)
             {"PodName": "held", "PodNamespace": "default", "PodUID": "uid-held", "Node": "n2"}],
    "preempt": [{"Pod": POD, "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-held"}],
                                                              "NumPDBViolations": 0}}},
                {"Pod": SHARED, "NodeNameToVictims": {"n1": {"Pods": [kpod("held", {"nvidia.com/gpu": "1"},
                                                                           uid="uid-held")]}}}],
    "release": [{"PodName": "held", "PodNamespace": "default", "PodUID": "uid-held"}],
}
VERBS = sorted(BODIES)
# A body that is not a JSON object is a 400 for every verb; a JSON object of the wrong shape is a
# 200 with Error for the verbs whose results carry one, a 400 for the others (docs/extender.md).
WITH_ERROR_FIELD = {"filter", "bind", "release"}
NOT_AN_OBJECT = ("body is not valid JSON", "body: expected a JSON object")


@contextlib.contextmanager
def fresh(p_bound: bool = False) -> Iterator[tuple[ExtenderState, TestClient, MemoryBinder]]:
    """A scenario extender with a journal; `p_bound`: pod p bound to n1 through the app."""
    binder = MemoryBinder()
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal.open(Path(tmp) / "scenario.journal", fsync=False)
        try:
            st_ = state_from_scenario({"nodes": [node("n1", gpus=2), node("n2", gpus=1)], "pods": [
                {"name": "held", "uid": "uid-held", "requests": {"nvidia.com/gpu": "1"},
                 "node": "n1"}]}, journal=journal, api=gpufleet, binder=binder)
            client = TestClient(create_app(st_, P))
            for pod in (POD, SHARED):   # bind finds the pods filter saw
                assert client.post(f"{P}/filter", json={"Pod": pod, "NodeNames": ["n1"]}
                                   ).status_code == 200
            if p_bound:
                assert client.post(f"{P}/bind", json=BODIES["bind"][0]).json() == {"Error": ""}
            yield st_, client, binder
        finally:
            journal.close()


def everything(st_: ExtenderState, binder: MemoryBinder) -> Any:
    """What a refusal must leave as it was: the cluster (allocations with their assume times),
    the binder's records, the extender's holds, uids, bind times, retry deadlines and pods
    deleted in flight, and the journal (its counters and its bytes)."""
    with st_.lock:
        journal = st_.journal
        assert journal is not None
        return (st_.cluster.snapshot(), dict(binder.records), dict(st_.held), dict(st_.uid_to_pod),
                dict(st_.bound_at), dict(st_.unanswered), dict(st_._gone), journal.stats(),
                journal.path.read_bytes())


@st.composite
def request_body(draw) -> tuple[str, bytes]:
    verb = draw(st.sampled_from(VERBS))
    body = draw(st.sampled_from(BODIES[verb]))
    how = draw(st.sampled_from(["data", "data", "bytes", "keys"]))
    if how == "data":
        return verb, json.dumps(draw(mutated_document(body))).encode()
    if how == "keys":   # the protocol reads keys in any letter case
        return verb, json.dumps(draw(mutated_document(json.loads(json.dumps(body).lower())))).encode()
    text = json.dumps(body).encode()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.binary(max_size=4)) + text[i + draw(st.integers(0, 4)):]
    return verb, text


def post(client: TestClient, verb: str, body: bytes) -> Any:
    with time_limit(20, f"POST {verb}"):
        r = client.post(f"{P}/{verb}", content=body, headers={"Content-Type": "application/json"})
    answer = r.json()
    error = answer.get("Error", "") if isinstance(answer, dict) else ""
    assert r.status_code in (200, 400) and "internal error" not in str(error), \
        (verb, body[:300], r.status_code, r.text[:300])
    if r.status_code == 400 and verb in WITH_ERROR_FIELD:
        assert str(error).startswith(NOT_AN_OBJECT), (verb, body[:300], error)
    return r.status_code != 200 or bool(error)


@campaign(400)
@given(request_body(), st.booleans())
def test_every_verb_answers_bad_bodies_with_json_and_keeps_the_state(case, p_bound):
    verb, body = case
    with fresh(p_bound) as (st_, client, binder):
        before = everything(st_, binder)
        refused = post(client, verb, body)
        if refused or verb in ("filter", "prioritize", "preempt"):
            assert everything(st_, binder) == before, (verb, body[:300])
        st_.cluster.check_invariants()
        assert client.get("/healthz").text == "ok"


@campaign(100)
@given(st.lists(request_body(), min_size=2, max_size=6), st.booleans())
def test_sequences_of_requests_keep_the_accounting_whole(cases, p_bound):
    with fresh(p_bound) as (st_, client, binder):
        for verb, body in cases:
            before = everything(st_, binder)
            if post(client, verb, body):
                assert everything(st_, binder) == before, (verb, body[:300])
            st_.cluster.check_invariants()
        usage = client.get("/state").json()
        assert usage["allocations"] == len(st_.cluster.allocations())


def test_a_refused_move_puts_the_hold_back_as_it_was():
    """A bound pod's bind to an unknown node, or to one it does not fit, is refused and its hold
    stays exactly as it was (its reservation time too)."""
    with fresh(p_bound=True) as (st_, client, binder):
        assert client.post(f"{P}/bind", json=BODIES["bind"][1]).json() == {"Error": ""}
        before = everything(st_, binder)
        for target in ("n9", "n2"):   # unknown; full (s holds n2's only GPU)
            answer = client.post(f"{P}/bind", json={**BODIES["bind"][0], "Node": target}).json()
            assert answer["Error"], target
            assert everything(st_, binder) == before, target
