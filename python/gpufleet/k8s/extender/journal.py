"""The durable record of a scenario-mode extender: an append-only journal of binds and releases.

One line per event, `<crc32 hex> <json>\\n`, written with one `write` on an O_APPEND descriptor and
fsynced before the bind or release is answered. Concurrent appenders share fsyncs (group commit):
a thread whose line an earlier fsync already covered does not sync again.

On start the journal is replayed (the last event per pod wins) and rewritten compactly (temporary
file, fsync, rename, fsync of the directory). A last line without its newline or with a wrong
checksum is what a crash in the middle of a write leaves: it was never answered, so it is dropped
with a log line. A bad line anywhere else is damage and stops the start, naming file and line.
A file lock keeps a second process from writing the same journal.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .convert import PodArgs

log = logging.getLogger("gpufleet.extender")

VERSION = 1


class JournalError(ValueError):
    """The journal cannot be used: damaged (file and line named), locked, or a write failed."""


@dataclass
class Replay:
    """What a journal says: the binds it holds, and the pods bound before its first event (in the
    scenario file) that it released."""
    binds: dict[str, dict[str, Any]] = field(default_factory=dict)   # pod -> bind event
    released: dict[str, dict[str, Any]] = field(default_factory=dict)  # pod -> release event
    lines: int = 0
    torn: bool = False

    def apply(self, event: dict[str, Any]) -> None:
        pod = event["pod"]
        if event["op"] == "bind":
            self.binds[pod] = event
        elif self.binds.pop(pod, None) is None:
            # Only a Bound pod is released, so a release without a bind before it is of a pod
            # the scenario file binds: it must stay recorded. A journal bind's release just
            # cancels the bind, and the file does not grow with pods that came and went.
            self.released[pod] = event

    def events(self) -> list[dict[str, Any]]:
        """The compact equivalent: at most two events per pod, releases first."""
        return list(self.released.values()) + list(self.binds.values())


def bind_event(pod: PodArgs, node: str, annotations: dict[str, str]) -> dict[str, Any]:
    args = dataclasses.asdict(pod)
    args.update(node_name=node, annotations=dict(annotations))
    return {"op": "bind", "pod": pod.name, "uid": pod.uid, "args": args}


def release_event(pod: str, uid: str = "") -> dict[str, Any]:
    return {"op": "release", "pod": pod, "uid": uid}


def pod_of(event: dict[str, Any]) -> PodArgs:
    """The bound pod a bind event describes (node_name and allocation annotations set)."""
    return PodArgs(**event["args"])


def _encode(event: dict[str, Any]) -> bytes:
    body = json.dumps(event, separators=(",", ":"), sort_keys=True).encode()
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _decode(line: bytes) -> dict[str, Any]:
    crc, _, body = line.partition(b" ")
    if len(crc) != 8 or int(crc, 16) != zlib.crc32(body):
        raise ValueError("checksum mismatch")
    event = json.loads(body)
    if not isinstance(event, dict) or event.get("op") not in ("bind", "release") or \
            not isinstance(event.get("pod"), str):
        raise ValueError("not a bind or release event")
    if event["op"] == "bind":
        if not isinstance(event.get("args"), dict):
            raise ValueError("bind event without args")
        pod_of(event)   # every field PodArgs needs is there
    return event


def read(path: str | Path) -> Replay:
    """Replay a journal file (a missing file is an empty journal)."""
    path = Path(path)
    replay = Replay()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return replay
    lines = data.split(b"\n")
    tail = lines.pop()            # after the last newline: b"" unless the last write was torn
    for i, line in enumerate(lines, start=1):
        if i == 1 and line.startswith(b"#"):
            continue              # header
        try:
            replay.apply(_decode(line))
        except (ValueError, TypeError) as e:
            if i == len(lines) and not tail:
                log.warning("journal %s: line %d is torn (%s); dropped, it was never answered",
                            path, i, e)
                replay.torn = True
                break
            raise JournalError(f"journal {path}: line {i} is damaged: {e}") from None
        replay.lines += 1
    if tail:
        log.warning("journal %s: last line %d has no newline (a write cut short); dropped",
                    path, len(lines) + 1)
        replay.torn = True
    return replay


def _fsync_dir(path: Path) -> None:
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """An open journal: `open()` replays and compacts it, then binds and releases are appended."""

    def __init__(self, path: Path, replay: Replay, lock_fd: int, fsync: bool = True,
                 compact_min: int = 1024) -> None:
        self.path = path
        # Rewritten once more than max(compact_min, 2 x held) events were appended since the last
        # rewrite: the file stays proportional to what is held, at amortised O(1) per event.
        self.compact_min = compact_min
        self._replay = replay     # kept current: compaction rewrites it
        self._lock_fd = lock_fd
        self._fsync = fsync
        self._lock = threading.Lock()        # file writes and _replay
        self._sync_lock = threading.Lock()   # fsync and compaction; taken before _lock
        self._fd = -1
        self._written = 0   # events appended
        self._synced = 0    # events known durable
        self._since_compaction = 0
        self._failed: Optional[str] = None

    @classmethod
    def open(cls, path: str | Path, fsync: bool = True, compact_min: int = 1024) -> "Journal":
        path = Path(path)
        lock_fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise JournalError(f"journal {path} is in use by another process") from None
        try:
            journal = cls(path, read(path), lock_fd, fsync, compact_min)
            with journal._sync_lock, journal._lock:
                journal._rewrite()
        except BaseException:
            os.close(lock_fd)
            raise
        return journal

    @property
    def replay(self) -> Replay:
        return self._replay

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"path": str(self.path), "held": len(self._replay.binds),
                    "events": self._since_compaction + len(self._replay.events()),
                    "failed": self._failed}

    # ---- appends ----------------------------------------------------------------------------
    def record_bind(self, pod: PodArgs, node: str, annotations: dict[str, str]) -> None:
        self._append(bind_event(pod, node, annotations))

    def record_release(self, pod: str, uid: str = "") -> None:
        self._append(release_event(pod, uid))

    def _append(self, event: dict[str, Any]) -> None:
        line = _encode(event)
        with self._lock:
            if self._failed:
                raise JournalError(f"journal {self.path} failed earlier ({self._failed}); "
                                   "restart the extender")
            try:
                n = os.write(self._fd, line)
                if n != len(line):
                    raise OSError(f"short write ({n} of {len(line)} bytes)")
            except OSError as e:
                self._failed = str(e)
                raise JournalError(f"journal {self.path}: write failed: {e}") from None
            self._replay.apply(event)
            self._written += 1
            self._since_compaction += 1
            seq = self._written
        self._sync(seq)

    def _sync(self, seq: int) -> None:
        with self._sync_lock:
            if self._synced >= seq:
                return            # another thread's fsync covered this line
            with self._lock:
                target = self._written
                compact = self._since_compaction > max(self.compact_min,
                                                       2 * len(self._replay.binds))
            try:
                if compact:
                    with self._lock:
                        self._rewrite()
                elif self._fsync:
                    os.fsync(self._fd)
            except OSError as e:
                # After a failed fsync the page cache may or may not reach the disk: stop.
                with self._lock:
                    self._failed = str(e)
                raise JournalError(f"journal {self.path}: sync failed: {e}") from None
            self._synced = max(self._synced, target)

    def _rewrite(self) -> None:
        """Write the compact form and switch to it (caller holds both locks)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            chunks = [b"# gpufleet extender journal v%d\n" % VERSION]
            chunks += [_encode(e) for e in self._replay.events()]
            os.write(fd, b"".join(chunks))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        _fsync_dir(self.path)
        old, self._fd = self._fd, os.open(self.path, os.O_WRONLY | os.O_APPEND)
        if old >= 0:
            os.close(old)
        self._since_compaction = 0
        self._synced = self._written

    def close(self) -> None:
        with self._sync_lock, self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1
