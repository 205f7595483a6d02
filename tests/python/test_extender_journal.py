"""Scenario mode's journal: binds and releases survive a restart, a torn last line is dropped, a
damaged line stops the start, refused records are reported, the file stays compact."""
from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import gpufleet

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from gpufleet.k8s.extender import journal as jr  # noqa: E402
from gpufleet.k8s.extender.app import create_app  # noqa: E402
from gpufleet.k8s.extender.state import state_from_scenario  # noqa: E402
from test_extender import bound_gshare, kpod, node  # noqa: E402

P = "/gpufleet"


def scenario(gpus: int = 2) -> dict[str, Any]:
    return {"nodes": [node("n1", gpus=gpus)],
            "pods": [bound_gshare("old", "n1", 0, 4096)]}   # holds 4 GiB of gpu 0


def start(path: Path, data: dict[str, Any], **journal_kw: Any):
    st = state_from_scenario(data, journal=jr.Journal.open(path, **journal_kw), api=gpufleet)
    return st, TestClient(create_app(st, P))


def bind(client: TestClient, name: str, node_name: str = "n1", gpus: str = "1") -> dict:
    pod = kpod(name, {"nvidia.com/gpu": gpus})
    client.post(f"{P}/filter", json={"Pod": pod, "NodeNames": [node_name]})
    return client.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                          "PodUID": f"uid-{name}", "Node": node_name}).json()


def holdings(st: Any) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {a.pod: (a.node, tuple(sorted(g.minor for g in a.devices)))
            for a in st.cluster.allocations()}


def test_binds_and_releases_survive_a_restart(tmp_path: Path):
    path = tmp_path / "s.journal"
    st, client = start(path, scenario(gpus=3))
    assert bind(client, "a") == {"Error": ""} and bind(client, "b") == {"Error": ""}
    # Releases stand in for pod deletions: one bound by us, one bound in the scenario file.
    rel = {"PodName": "a", "PodNamespace": "default", "PodUID": "uid-a"}
    assert client.post(f"{P}/release", json=rel).json() == {"Error": ""}
    assert "holds no bound allocation" in client.post(f"{P}/release", json=rel).json()["Error"]
    assert client.post(f"{P}/release", json={"PodName": "old"}).json() == {"Error": ""}
    assert bind(client, "c") == {"Error": ""}
    before = holdings(st)
    assert set(before) == {"default/b", "default/c"}
    st.journal.close()

    st2, client2 = start(path, scenario(gpus=3))
    assert holdings(st2) == before
    assert client2.get("/state").json()["rebuild"]["restored"] == 2
    # A retried bind of a pod the journal holds succeeds without a second allocation.
    assert bind(client2, "b") == {"Error": ""} and holdings(st2) == before
    # Exactly one GPU is free: the one "a" and "old" gave back.
    assert bind(client2, "d") == {"Error": ""}
    assert "does not fit" in bind(client2, "e")["Error"]
    assert sorted(m for _, ms in holdings(st2).values() for m in ms) == [0, 1, 2]
    st2.cluster.check_invariants()
    st2.journal.close()
    # The compacted journal: what it holds, and the release of the scenario's pod ("a" came and
    # went, so it leaves nothing behind).
    events = [json.loads(line.split(" ", 1)[1]) for line in path.read_text().splitlines()[1:]]
    assert sorted((e["op"], e["pod"]) for e in events) == [
        ("bind", "default/b"), ("bind", "default/c"), ("bind", "default/d"),
        ("release", "default/old")]


def test_torn_last_line_is_dropped_with_a_log_line(tmp_path: Path, caplog):
    path = tmp_path / "s.journal"
    st, client = start(path, scenario())
    assert bind(client, "a") == {"Error": ""}
    st.journal.close()
    whole = path.read_bytes()
    line = jr._encode(jr.release_event("default/a"))
    for torn in (line[: len(line) // 2], line[:-1], b"deadbeef " + line[9:]):
        path.write_bytes(whole + torn)
        with caplog.at_level(logging.WARNING, logger="gpufleet.extender"):
            caplog.clear()
            st2, _ = start(path, scenario())
        assert "torn" in caplog.text or "no newline" in caplog.text
        assert set(holdings(st2)) == {"default/old", "default/a"}   # the release never happened
        st2.journal.close()
        assert path.read_bytes().count(b"\n") == 2    # header + the bind: compacted on start


def test_damaged_line_before_the_end_stops_the_start(tmp_path: Path):
    path = tmp_path / "s.journal"
    st, client = start(path, scenario(gpus=3))
    assert bind(client, "a") == {"Error": ""} and bind(client, "b") == {"Error": ""}
    st.journal.close()
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"n1"', b'"n9"')     # checksum no longer matches
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(jr.JournalError, match=r"s\.journal: line 2 is damaged: checksum"):
        jr.Journal.open(path)
    assert path.read_bytes() == b"\n".join(lines)     # left as it was for inspection


def test_a_second_process_cannot_open_the_same_journal(tmp_path: Path):
    j = jr.Journal.open(tmp_path / "s.journal")
    with pytest.raises(jr.JournalError, match="in use"):
        jr.Journal.open(tmp_path / "s.journal")
    j.close()
    jr.Journal.open(tmp_path / "s.journal").close()


def test_a_journal_of_its_own_directory_keeps_the_scenario_directory_clean(tmp_path: Path, capsys):
    """--journal puts the journal, its mark and its lock in the directory named, none beside the
    scenario; a directory that does not exist stops the start with one line naming it."""
    import yaml

    from gpufleet.cli import main
    from gpufleet.k8s.extender.state import load_scenario

    config, journals = tmp_path / "config", tmp_path / "state"
    config.mkdir()
    journals.mkdir()
    path = config / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario()))
    st = load_scenario(path, journal=journals / "binds.journal", api=gpufleet)
    st.journal.close()
    assert sorted(p.name for p in journals.iterdir()) == [
        "binds.journal", "binds.journal.lock", "binds.journal.mark"]
    assert sorted(p.name for p in config.iterdir()) == ["scenario.yaml"]

    missing = tmp_path / "absent" / "binds.journal"
    with pytest.raises(jr.JournalError, match=f"its directory {tmp_path / 'absent'} does not exist"):
        jr.Journal.open(missing)
    capsys.readouterr()   # only what the command prints (a handler an earlier test left may log)
    assert main(["extender", "--state", str(path), "--journal", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{tmp_path / 'absent'} does not exist" in err
    assert not (tmp_path / "absent").exists()
    assert sorted(p.name for p in config.iterdir()) == ["scenario.yaml"]


def test_gang_plans_are_replayed_compacted_and_checked(tmp_path: Path):
    """A plan event is held per gang until its unplan, kept by compaction with its number, and a
    plan line that does not say what it holds is damage like any other."""
    path = tmp_path / "s.journal"
    j = jr.Journal.open(path)
    j.record_plan("default/g", {"n1": 2}, "rack-a", 1000.0, [])
    j.record_plan("default/h", {"n2": 1}, "rack-b", 1001.0, ["h-0"])
    j.record_unplan("default/h")
    j.close()
    j = jr.Journal.open(path)   # replayed, then rewritten compactly
    assert {k: (e["slots"], e["domain"], e["made"], e["bound"], e["seq"])
            for k, e in j.replay.plans.items()} == {"default/g": ({"n1": 2}, "rack-a", 1000.0, [], 1)}
    j.close()
    assert path.read_bytes().count(b"\n") == 2   # header + the plan still held
    bad = jr._encode({**jr.plan_event("default/x", {"n1": "two"}, "", 0.0, []), "seq": 4})
    path.write_bytes(path.read_bytes() + bad + jr._encode({**jr.unplan_event("default/g"), "seq": 5}))
    with pytest.raises(jr.JournalError, match="line 3 is damaged: plan event without node slots"):
        jr.Journal.open(path)


def test_records_the_core_refuses_are_reported_and_the_rest_restored(tmp_path: Path, caplog):
    path = tmp_path / "s.journal"
    st, client = start(path, scenario(gpus=3))
    assert bind(client, "a") == {"Error": ""} and bind(client, "b") == {"Error": ""}
    held = holdings(st)
    lost = next(p for p, (_, ms) in held.items() if ms == (2,))
    st.journal.close()
    # The node now has two GPUs: the pod on gpu 2 cannot be restored.
    with caplog.at_level(logging.WARNING, logger="gpufleet.extender"):
        st2, client2 = start(path, scenario(gpus=2))
    assert lost not in holdings(st2) and set(held) - {lost} <= set(holdings(st2))
    view = client2.get("/state").json()["rebuild"]
    assert [r["pod"] for r in view["refused"]] == [lost] and "gpu 2" in view["refused"][0]["reason"]
    assert "1 pods refused" in caplog.text and lost in caplog.text
    st2.cluster.check_invariants()
    st2.journal.close()


def test_journal_stays_compact_over_many_binds_and_releases(tmp_path: Path):
    path = tmp_path / "s.journal"
    st, client = start(path, {"nodes": [node("n1", gpus=2)]}, compact_min=16)
    for i in range(60):
        assert bind(client, f"p{i}") == {"Error": ""}
        assert client.post(f"{P}/release", json={"PodName": f"p{i}"}).json() == {"Error": ""}
    stats = client.get("/state").json()["journal"]
    assert stats["held"] == 0 and stats["failed"] is None
    # Compaction ran: the file never holds more than header + held + compact_min + 1 events.
    assert path.read_bytes().count(b"\n") <= 1 + 17
    st.journal.close()
    st2, _ = start(path, {"nodes": [node("n1", gpus=2)]})
    assert holdings(st2) == {}
    st2.journal.close()


def test_a_failed_journal_write_fails_the_bind_and_reserves_nothing(tmp_path: Path):
    path = tmp_path / "s.journal"
    st, client = start(path, scenario())
    before = st.cluster.snapshot()
    os.close(st.journal._fd)
    st.journal._fd = os.open(path, os.O_RDONLY)       # the disk refuses writes from now on
    out = bind(client, "a")
    assert "journal" in out["Error"] and "write failed" in out["Error"]
    assert st.cluster.snapshot() == before
    assert "failed earlier" in bind(client, "b")["Error"]   # no bind is answered without a record
    assert st.cluster.snapshot() == before
    st.journal.close()
