"""Scenario mode's journal on start: a file cut at any record boundary or inside any record, or
damaged in any record, is reported with what was lost and refused unless the loss is accepted;
a write cut short past the high-water mark (never answered) is dropped; a missing or damaged mark
refuses the start; a version 1 journal still loads. Concurrent appends share their syncs and
return only once the mark covers them."""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import gpufleet
from gpufleet.k8s.extender import convert
from gpufleet.k8s.extender import journal as jr
from gpufleet.k8s.extender.durable import Mark
from gpufleet.k8s.extender.state import ANN_DEVICE_ALLOCATED, state_from_scenario
from test_extender import kpod, node
from test_extender_journal import P, TestClient, bind, create_app, holdings


def start(path: Path, data: dict[str, Any], **kw: Any):
    state_kw = {k: kw.pop(k) for k in ("hold_timeout_s",) if k in kw}
    st = state_from_scenario(data, journal=jr.Journal.open(path, **kw), api=gpufleet, **state_kw)
    return st, TestClient(create_app(st, P))


def mark_of(path: Path) -> Path:
    return path.with_name(path.name + ".mark")


def replayed(lines: list[bytes]) -> set[str]:
    """The pods a list of whole record lines leaves bound (last event per pod wins)."""
    held: set[str] = set()
    for line in lines:
        event = json.loads(line.split(b" ", 1)[1])
        (held.add if event["op"] == "bind" else held.discard)(event["pod"])
    return held


@pytest.fixture(scope="module")
def answered_journal(tmp_path_factory) -> tuple[bytes, bytes]:
    """A journal whose every record was answered: 4 binds compacted by a restart, then 3 binds and
    a release appended. Returns the journal's and its mark's bytes."""
    path = tmp_path_factory.mktemp("j") / "s.journal"
    nodes = {"nodes": [node("n1", gpus=8)]}
    st, client = start(path, nodes)
    for i in range(4):
        assert bind(client, f"p{i}") == {"Error": ""}
    st.journal.close()
    st, client = start(path, nodes)
    for i in range(4, 7):
        assert bind(client, f"p{i}") == {"Error": ""}
    assert client.post(f"{P}/release", json={"PodName": "p1"}).json() == {"Error": ""}
    st.journal.close()
    return path.read_bytes(), mark_of(path).read_bytes() if mark_of(path).exists() else b""


def put(tmp: Path, name: str, data: bytes, mark: bytes) -> Path:
    path = tmp / name / "s.journal"
    path.parent.mkdir()
    path.write_bytes(data)
    if mark:
        mark_of(path).write_bytes(mark)
    return path


def test_a_cut_at_every_record_boundary_or_inside_a_record_is_reported(
        answered_journal, tmp_path: Path, caplog):
    data, mark = answered_journal
    lines = data.split(b"\n")[:-1]
    assert len(lines) == 1 + 4 + 4     # header, 4 compacted records, 4 appended
    ends = [sum(len(x) + 1 for x in lines[:k]) for k in range(len(lines) + 1)]
    cuts = [(e, k) for k, e in enumerate(ends[:-1])] + \
        [(e + len(lines[k]) // 2, k) for k, e in enumerate(ends[:-1])]   # k whole lines kept
    for at, kept in cuts:
        path = put(tmp_path, f"cut{at}", data[:at], mark)
        with pytest.raises(jr.JournalError, match="may be lost.*--accept-journal-loss") as e:
            jr.Journal.open(path)
        msg = str(e.value)
        assert "s.journal: " in msg
        if kept < 5:     # inside the compacted part: the header lists 4 records
            assert f"the file ends after {max(0, kept - 1)} of the 4 compacted" in msg or \
                kept == 0, msg
        if kept >= 5:    # the appended part: numbers 5..8 were written before answers
            assert f"records {kept}..8 were written before answers" in msg, msg
        assert path.read_bytes() == data[:at], "a refused start must leave the file as it was"
        # Accepted: exactly what the surviving whole records say comes back, and the next start
        # needs no acceptance (the mark now matches the file).
        with caplog.at_level(logging.ERROR, logger="gpufleet.extender"):
            caplog.clear()
            st, client = start(path, {"nodes": [node("n1", gpus=8)]}, accept_loss=True)
        assert "going on without them, as accepted" in caplog.text
        assert set(holdings(st)) == replayed(lines[1:kept]) if kept else holdings(st) == {}
        assert client.get("/state").json()["journal"]["lost_at_start"]
        st.journal.close()
        jr.Journal.open(path).close()
    assert len(cuts) == 18


def test_damage_in_any_record_is_reported_with_its_line_and_pod(answered_journal,
                                                                 tmp_path: Path):
    data, mark = answered_journal
    lines = data.split(b"\n")[:-1]
    for i in range(1, len(lines)):     # the last record too: it was answered
        damaged = list(lines)
        at = 11    # the first letter of the first key, after `<crc> {"`
        damaged[i] = damaged[i][:at] + bytes([damaged[i][at] ^ 0x20]) + damaged[i][at + 1:]
        pod = json.loads(lines[i].split(b" ", 1)[1])["pod"]
        path = put(tmp_path, f"bad{i}", b"\n".join(damaged) + b"\n", mark)
        with pytest.raises(jr.JournalError,
                           match=rf"line {i + 1} .*checksum mismatch.*pod {pod}"):
            jr.Journal.open(path)
        st, _ = start(path, {"nodes": [node("n1", gpus=8)]}, accept_loss=True)
        assert set(holdings(st)) == replayed(lines[1:i] + lines[i + 1:])
        st.journal.close()


def test_a_write_cut_short_past_the_mark_is_dropped_as_never_answered(answered_journal,
                                                                       tmp_path: Path, caplog):
    data, mark = answered_journal
    unanswered = jr._encode(dict(jr.release_event("default/p0"), seq=9))
    for name, tail in (("half", unanswered[:len(unanswered) // 2]),
                       ("nonewline", unanswered[:-1]),
                       ("badsum", b"deadbeef " + unanswered[9:])):
        path = put(tmp_path, name, data + tail, mark)
        with caplog.at_level(logging.WARNING, logger="gpufleet.extender"):
            caplog.clear()
            st, _ = start(path, {"nodes": [node("n1", gpus=8)]})
        assert "never answered (answers cover records up to 8)" in caplog.text
        assert "default/p0" in holdings(st)      # the release never happened
        st.journal.close()


def test_a_missing_or_damaged_mark_refuses_the_start(answered_journal, tmp_path: Path):
    data, mark = answered_journal
    path = put(tmp_path, "nomark", data, mark)
    mark_of(path).unlink()
    with pytest.raises(jr.JournalError, match=r"s\.journal\.mark is missing"):
        jr.Journal.open(path)
    mark_of(path).write_bytes(b"\0" * 64)
    with pytest.raises(jr.JournalError, match=r"mark .* is damaged"):
        jr.Journal.open(path)
    st, _ = start(path, {"nodes": [node("n1", gpus=8)]}, accept_loss=True)
    assert set(holdings(st)) == replayed(data.split(b"\n")[1:-1])
    st.journal.close()
    # A journal gone entirely while its mark says binds were answered is a loss too.
    path = put(tmp_path, "nojournal", data, mark)
    path.unlink()
    with pytest.raises(jr.JournalError, match="missing or empty but its high-water mark"):
        jr.Journal.open(path)


def test_a_version_1_journal_loads_and_says_truncation_is_undetectable(tmp_path: Path, caplog):
    path = tmp_path / "s.journal"
    pods = [convert.pod_args(kpod(f"v{i}", {"nvidia.com/gpu": "1"}))
            for i in range(2)]
    ann = {ANN_DEVICE_ALLOCATED: json.dumps({"gpu": [{"minor": 0, "resources": {
        "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "16Gi",
        "koordinator.sh/gpu-memory-ratio": "100"}}]})}
    old = [jr.bind_event(pods[0], "n1", ann), jr.bind_event(pods[1], "n1", ann),
           jr.release_event(pods[1].name, pods[1].uid)]
    path.write_bytes(b"# gpufleet extender journal v1\n" + b"".join(jr._encode(e) for e in old)
                     + jr._encode(jr.release_event(pods[0].name))[:20])
    with caplog.at_level(logging.WARNING, logger="gpufleet.extender"):
        st, _ = start(path, {"nodes": [node("n1", gpus=2)]})
    assert "version 1: it has no high-water mark" in caplog.text and "unknown" in caplog.text
    assert set(holdings(st)) == {"default/v0"}
    st.journal.close()
    assert path.read_bytes().startswith(b"# gpufleet extender journal v2 ")
    st, _ = start(path, {"nodes": [node("n1", gpus=2)]})
    assert set(holdings(st)) == {"default/v0"}
    st.journal.close()


def test_concurrent_appends_share_syncs_and_return_only_once_marked(tmp_path: Path, monkeypatch):
    path = tmp_path / "s.journal"
    j = jr.Journal.open(path)
    calls = {"fsync": 0, "mark": 0}
    real_fsync, real_mark = os.fsync, Mark.write

    def slow_fsync(fd: int) -> None:     # a disk slow enough that appenders pile up
        calls["fsync"] += 1
        time.sleep(0.01)
        real_fsync(fd)

    def counted_mark(self: Mark, value: int) -> None:
        calls["mark"] += 1
        real_mark(self, value)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    monkeypatch.setattr(Mark, "write", counted_mark)
    late: list[str] = []

    def work(t: int) -> None:
        for i in range(5):
            pod = convert.pod_args(kpod(f"p{t}-{i}", {"nvidia.com/gpu": "1"}))
            j.record_bind(pod, "n1", {})
            # Returned: its record is in the file and the mark covers it.
            mine = [json.loads(x.split(b" ", 1)[1]) for x in path.read_bytes().split(b"\n")[1:-1]]
            seq = next(e["seq"] for e in mine if e["pod"] == pod.name)
            if Mark.read(mark_of(path)) < seq:
                late.append(pod.name)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    j.close()
    assert late == []
    assert Mark.read(mark_of(path)) == 40
    assert calls["fsync"] < 40 and calls["mark"] < 40, calls   # shared by the group
