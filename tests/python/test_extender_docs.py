"""docs/extender.md describes the extender as it is: its options table lists every option of
`gpufleet extender`, the metrics list every metric /metrics exports with every request outcome,
and the /state description every field of the journal's report."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from starlette.testclient import TestClient

import gpufleet
from gpufleet.cli import build_parser
from gpufleet.k8s.extender import metrics
from gpufleet.k8s.extender.app import create_app
from gpufleet.k8s.extender.journal import Journal
from gpufleet.k8s.extender.state import state_from_scenario
from test_extender import kpod, node

DOC = (Path(__file__).resolve().parents[2] / "docs" / "extender.md").read_text()
P = "/gpufleet"
TOKEN = "a-token-of-sixteen-or-more"


def _section(start: str, end: str) -> str:
    """The docs' text from the line starting with `start` to the next line starting with `end`."""
    text = DOC[DOC.index(start):]
    return text[:text.index(end, len(start))]


def test_the_options_table_lists_every_option():
    sub = build_parser()._subparsers._group_actions[0].choices["extender"]
    options = {o for a in sub._actions for o in a.option_strings if o.startswith("--")}
    table = "\n".join(line for line in DOC.splitlines() if line.startswith("| `--"))
    missing = sorted(o for o in options - {"--help"} if f"`{o}" not in table)
    assert not missing, f"docs/extender.md's options table lacks {missing}"


def test_the_metrics_list_names_every_metric_and_outcome():
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal.open(Path(tmp) / "s.journal", fsync=False)
        try:
            st = state_from_scenario({"nodes": [node("n1", gpus=1)]}, journal=journal,
                                     api=gpufleet)
            client = TestClient(create_app(st, P, token=TOKEN.encode()))
            good = {"Authorization": f"Bearer {TOKEN}"}
            pod = kpod("p", {"nvidia.com/gpu": "1"})
            client.post(f"{P}/filter", json={"Pod": pod, "NodeNames": ["n1"]}, headers=good)
            client.post(f"{P}/bind", json={"PodName": "p", "PodUID": "uid-p", "Node": "n1"},
                        headers=good)
            client.post(f"{P}/bind", json={"PodName": "q", "Node": "n1"}, headers=good)
            client.post(f"{P}/prioritize", json=[], headers=good)
            client.post(f"{P}/filter", json={})
            text = client.get("/metrics", headers=good).text
        finally:
            journal.close()
    # Each metric as the docs name it (counters with _total); the client's _created series of a
    # counter or histogram is its start time, not a metric of its own.
    names = {n for n in re.findall(r"^# HELP (gpufleet_\w+) ", text, re.M)
             if not n.endswith("_created")}
    assert "gpufleet_extender_journal_write_failures_total" in names, names
    listed = _section("- `GET /metrics`", "- `GET /state`")
    assert {n for n in names if f"`{n}" not in listed} == set(), listed
    seen = set(re.findall(r'outcome="(\w+)"', text))
    assert seen <= set(metrics.OUTCOMES) and {"ok", "error", "bad_request", "unauthorized"} <= seen
    for outcome in metrics.OUTCOMES:
        assert f"`{outcome}`" in listed and outcome in metrics.__doc__, outcome


def test_the_state_description_lists_every_journal_field():
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal.open(Path(tmp) / "s.journal", fsync=False)
        try:
            fields = set(journal.stats())
        finally:
            journal.close()
    described = _section("- `GET /state`", "With a scenario file")
    assert {f for f in fields if f"`{f}`" not in described} == set(), described
