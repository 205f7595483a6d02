"""Scenario mode's journal on a nearly full disk (a 64 KiB tmpfs): a bind whose record cannot be
written is answered with an error and so is every later one, /readyz, /metrics, /state and the
log say why; a compaction that cannot write its copy leaves the journal as it was and the extender
goes on; a start that cannot compact refuses and changes nothing. Every bind answered with
success is held after the restart.

Each scenario runs with its directory on a fresh tmpfs: mounted directly where that is permitted
(root, as here and in CI), else inside `unshare -rm` (a user and mount namespace) in a child
process that runs this file.
"""
from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest

import gpufleet
from gpufleet.k8s.extender import journal as jr
from gpufleet.k8s.extender.state import state_from_scenario
from test_extender import _metric, node
from test_extender_journal import P, TestClient, bind, create_app, holdings

SIZE = "64k"
PAGE = 4096
NODES = {"nodes": [node("n1", gpus=48)]}


# ---- a small disk ------------------------------------------------------------------------------
def _mount(where: Path) -> bool:
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)],
                       capture_output=True)
    return r.returncode == 0


def _in_tmpfs(fn: Callable[[Path], None]) -> None:
    where = Path(tempfile.mkdtemp(prefix="gpufleet-small-disk-"))
    try:
        if not _mount(where):
            raise OSError(f"cannot mount a tmpfs on {where}")
        try:
            fn(where)
        finally:
            # Lazily when a failed scenario left a file open: the mount goes when it closes.
            if subprocess.run(["umount", str(where)], capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(where)], check=True)
    finally:
        where.rmdir()


def on_small_disk(fn: Callable[[Path], None]) -> None:
    """Run fn(dir) with dir on a fresh 64 KiB tmpfs, unmounted afterwards."""
    probe = Path(tempfile.mkdtemp(prefix="gpufleet-mount-probe-"))
    try:
        direct = _mount(probe)
        if direct:
            subprocess.run(["umount", str(probe)], check=True)
    finally:
        probe.rmdir()
    if direct:
        return _in_tmpfs(fn)
    unshare = subprocess.run(["unshare", "-rm", "true"], capture_output=True) \
        if os.path.exists("/usr/bin/unshare") else None
    if unshare is None or unshare.returncode != 0:
        pytest.skip("a tmpfs cannot be mounted here: neither mount (needs root) nor "
                    "unshare -rm (needs unprivileged user namespaces) is permitted")
    r = subprocess.run(["unshare", "-rm", sys.executable, __file__, fn.__name__],
                       cwd=Path(__file__).parent, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{fn.__name__} in a user+mount namespace:\n{r.stdout}{r.stderr}"


def fill(where: Path, leave_pages: int) -> Path:
    """Use up the disk but `leave_pages` whole pages (plus the slack in files' last pages)."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                if os.write(fd, b"\0" * PAGE) < PAGE:
                    break
            except OSError as e:
                assert e.errno == errno.ENOSPC
                break
    finally:
        os.close(fd)
    size = filler.stat().st_size // PAGE * PAGE
    os.truncate(filler, max(0, size - leave_pages * PAGE))
    return filler


def start(path: Path, **kw: Any):
    st = state_from_scenario(NODES, journal=jr.Journal.open(path, **kw), api=gpufleet)
    return st, TestClient(create_app(st, P))


# ---- scenarios (module-level: the namespace fallback runs them by name) -------------------------
def full_disk_during_bind(where: Path) -> None:
    path = where / "s.journal"
    st, client = start(path)
    filler = fill(where, leave_pages=1)
    answered, errors = set(), []
    for i in range(40):
        out = bind(client, f"p{i}")
        if out["Error"]:
            errors.append(out["Error"])
        else:
            assert not errors, "a bind was answered with success after one failed"
            answered.add(f"default/p{i}")
    assert answered and len(errors) >= 2, (answered, errors)
    assert "journal" in errors[0] and "No space left on device" in errors[0]
    assert all("failed earlier" in e and "No space left" in e for e in errors[1:])
    assert set(holdings(st)) == answered            # failed binds hold nothing
    ready = client.get("/readyz")
    assert ready.status_code == 503 and "journal" in ready.text and "No space left" in ready.text
    view = client.get("/state").json()["journal"]
    assert "No space left" in view["failed"]
    metrics = client.get("/metrics").text
    assert _metric(metrics, "gpufleet_extender_journal_failed") == 1
    assert _metric(metrics, "gpufleet_extender_journal_write_failures_total", what="write") + \
        _metric(metrics, "gpufleet_extender_journal_write_failures_total", what="sync") >= 1
    st.journal.close()
    filler.unlink()
    st, _ = start(path)
    assert set(holdings(st)) == answered
    st.journal.close()


def full_disk_during_compaction(where: Path) -> None:
    path = where / "s.journal"
    st, client = start(path, compact_min=10**6)
    for i in range(10):
        assert bind(client, f"p{i}") == {"Error": ""}
    for i in range(10, 16):   # 22 events since the start's compaction: over 2 x 10 held
        assert bind(client, f"p{i}") == {"Error": ""}
        assert client.post(f"{P}/release", json={"PodName": f"p{i}"}).json() == {"Error": ""}
    assert path.stat().st_size > PAGE   # its compacted copy needs more than the one free page
    filler = fill(where, leave_pages=1)
    before = path.read_bytes()
    st.journal.compact_min = 0
    # The release that triggers the compaction: its copy cannot be written, the journal is kept
    # (it holds every event) and fsynced instead, so the release is durable and answered.
    assert client.post(f"{P}/release", json={"PodName": "p0"}).json() == {"Error": ""}
    view = client.get("/state").json()["journal"]
    assert "No space left" in view["compaction_failed"] and view["failed"] is None
    assert view["write_failures"] == {"compaction": 1}
    after = path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert not path.with_name(path.name + ".tmp").exists()
    assert jr.read(path).problems == [] and client.get("/readyz").status_code == 200
    assert _metric(client.get("/metrics").text, "gpufleet_extender_journal_write_failures_total",
                   what="compaction") == 1
    answered = set(holdings(st))
    assert answered == {f"default/p{i}" for i in range(1, 10)}
    st.journal.close()
    # A start on the full disk cannot compact either: it refuses and leaves the file as it was.
    with pytest.raises(jr.JournalError, match="cannot compact it at start.*No space left"):
        jr.Journal.open(path)
    assert path.read_bytes() == after
    filler.unlink()
    st, _ = start(path)
    assert set(holdings(st)) == answered
    st.journal.close()


def full_disk_during_restart(where: Path) -> None:
    path = where / "scenario.json"
    import json

    path.write_text(json.dumps(NODES))
    journal = where / "scenario.json.journal"
    st = state_from_scenario(NODES, journal=jr.Journal.open(journal), api=gpufleet)
    client = TestClient(create_app(st, P))
    for i in range(30):
        assert bind(client, f"p{i}") == {"Error": ""}
    answered = set(holdings(st))
    st.journal.close()
    before = journal.read_bytes()
    filler = fill(where, leave_pages=1)    # room for a part of the compacted copy
    assert len(before) > 2 * PAGE
    with pytest.raises(jr.JournalError, match="cannot compact it at start.*No space left"):
        jr.Journal.open(journal)
    assert journal.read_bytes() == before
    # The real CLI: a clean exit 2 naming the journal and the cause, the journal unchanged.
    r = subprocess.run([sys.executable, "-m", "gpufleet", "extender", "--listen", "127.0.0.1:0",
                        "--state", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "cannot compact it at start" in r.stderr and "No space left" in r.stderr, r.stderr
    assert journal.read_bytes() == before
    assert not journal.with_name(journal.name + ".tmp").exists()
    filler.unlink()
    st, _ = start(journal)
    assert set(holdings(st)) == answered
    st.journal.close()


# ---- tests -------------------------------------------------------------------------------------
def test_full_disk_during_bind_answers_errors_and_loses_no_answered_bind():
    on_small_disk(full_disk_during_bind)


def test_full_disk_during_compaction_keeps_the_journal_and_goes_on():
    on_small_disk(full_disk_during_compaction)


def test_full_disk_during_restart_refuses_and_leaves_the_journal_unchanged():
    on_small_disk(full_disk_during_restart)


if __name__ == "__main__":   # the namespace fallback: this process may mount
    _in_tmpfs(globals()[sys.argv[1]])
