"""The durable record of a scenario-mode extender: an append-only journal of binds and releases,
and beside it a high-water mark of what may have been answered.

Version 2 file: a header `# gpufleet extender journal v2 <crc32 hex> {"base": B, "records": K}`,
then K compacted records (the state as of sequence number B), then one line per event appended
since, `<crc32 hex> <json>\\n`, numbered B+1, B+2, ... (`seq`). A line is written with one
`write` loop on an O_APPEND descriptor. Concurrent appenders share one sync (group commit): the
journal is fsynced, then the mark file (`FILE.mark`) records the last sequence number that fsync
covered, and only then are those events answered; the two stages are pipelined, so one group's
mark is written while the next group's fsync runs. So on start, records up to the mark were
possibly answered and must all be present; records past it were never answered.

On start the journal is checked against the mark: a damaged line anywhere, compacted records
missing, a gap in the numbering or a file that ends before the mark are losses of possibly
answered binds, reported with the lines, sequence numbers and (where the damaged bytes still
show them) pods, and the start is refused unless the loss is accepted. A last line past the mark
that is cut short or fails its checksum is what a crash during a write leaves: it was never
answered and is dropped with a log line. Binds past the mark are restored flagged `unanswered`
(the state releases them if the scheduler does not retry them). Then the journal is rewritten
compactly (durable.replace_verified: a failure leaves the old file as it was). It is also
compacted while running once it has grown past twice what it holds; if that copy cannot be
written the old file is kept and fsynced instead. Version 1 journals (no numbers, no mark) are
read as before, with truncation undetectable, and rewritten as version 2.

A failed write, fsync or mark update puts the journal in the failed state: it takes no more
events until the extender is restarted. A file lock keeps a second process from writing it.

Gangs placed by topology (gangs.py) journal their held plans the same way: a `plan` event (the
gang, its nodes' slots, domain, wall-clock time made and pods bound before it) when a plan is
made, an `unplan` when its last slot is spent, and each gang pod's bind event names its `gang`,
so a start spends again the slots of the binds that followed the plan. Earlier releases read a
journal holding these events as damaged.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import re
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import faults
from .convert import PodArgs
from .durable import Mark, fsync_dir, replace_verified, write_all
from .faults import crash_point

log = logging.getLogger("gpufleet.extender")

VERSION = 2
V1_HEADER = b"# gpufleet extender journal v1"
V2_PREFIX = b"# gpufleet extender journal v2 "
ACCEPT_HINT = ("start with --accept-journal-loss (accept_loss=True) to go on without what was "
               "lost")


class JournalError(ValueError):
    """The journal cannot be used: damaged or lost records (named), locked, or a write failed."""


@dataclass
class Replay:
    """What a journal file says: the binds it holds, the pods bound before its first event (in
    the scenario file) that it released, and what reading it found wrong."""
    binds: dict[str, dict[str, Any]] = field(default_factory=dict)   # pod -> bind event
    released: dict[str, dict[str, Any]] = field(default_factory=dict)  # pod -> release event
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)   # gang -> held plan event
    lines: int = 0
    version: Optional[int] = None    # None: no file, or an empty one
    last_seq: int = 0                # the highest sequence number the file holds
    torn: Optional[str] = None       # a last line cut short or failing its checksum (dropped)
    problems: list[str] = field(default_factory=list)   # damage: records that may be lost

    def apply(self, event: dict[str, Any]) -> None:
        if event["op"] == "plan":
            self.plans[event["gang"]] = event
            return
        if event["op"] == "unplan":
            self.plans.pop(event["gang"], None)
            return
        pod = event["pod"]
        if event["op"] == "bind":
            earlier = self.binds.get(pod)
            if earlier is not None and "gang" in earlier and "gang" not in event:
                event["gang"] = earlier["gang"]   # a retried bind of the same gang pod
            self.binds[pod] = event
        elif self.binds.pop(pod, None) is None:
            # Only a Bound pod is released, so a release without a bind before it is of a pod
            # the scenario file binds: it must stay recorded. A journal bind's release just
            # cancels the bind, and the file does not grow with pods that came and went.
            self.released[pod] = event

    def events(self) -> list[dict[str, Any]]:
        """The compact equivalent: at most two events per pod, releases first, then one plan
        per gang still held."""
        return list(self.released.values()) + list(self.binds.values()) + list(self.plans.values())


def bind_event(pod: PodArgs, node: str, annotations: dict[str, str],
               gang: Optional[str] = None) -> dict[str, Any]:
    args = dataclasses.asdict(pod)
    args.update(node_name=node, annotations=dict(annotations))
    event = {"op": "bind", "pod": pod.name, "uid": pod.uid, "args": args}
    if gang is not None:
        event["gang"] = gang
    return event


def plan_event(gang: str, slots: dict[str, int], domain: str, made: float,
               bound: list[str]) -> dict[str, Any]:
    """A gang's held plan: node -> pods it still takes, its domain, when it was made (Unix
    seconds) and the gang's pods bound before it."""
    return {"op": "plan", "gang": gang, "slots": dict(slots), "domain": domain, "made": made,
            "bound": list(bound)}


def unplan_event(gang: str) -> dict[str, Any]:
    return {"op": "unplan", "gang": gang}


def release_event(pod: str, uid: str = "") -> dict[str, Any]:
    return {"op": "release", "pod": pod, "uid": uid}


def pod_of(event: dict[str, Any]) -> PodArgs:
    """The bound pod a bind event describes (node_name and allocation annotations set)."""
    return PodArgs(**event["args"])


def _checksummed(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
    return b"%08x %s" % (zlib.crc32(body), body)


def _encode(event: dict[str, Any]) -> bytes:
    return _checksummed(event) + b"\n"


def _verified(line: bytes) -> Any:
    crc, _, body = line.partition(b" ")
    if len(crc) != 8 or int(crc, 16) != zlib.crc32(body):
        raise ValueError("checksum mismatch")
    return json.loads(body)


def _check_plan(event: dict[str, Any]) -> None:
    if not isinstance(event.get("gang"), str):
        raise ValueError(f"{event['op']} event without a gang")
    if event["op"] == "unplan":
        return
    slots, bound = event.get("slots"), event.get("bound")
    if not isinstance(slots, dict) or not all(
            isinstance(n, str) and type(k) is int and k >= 0 for n, k in slots.items()):
        raise ValueError("plan event without node slots")
    if not isinstance(event.get("domain"), str) or \
            type(event.get("made")) not in (int, float) or \
            not isinstance(bound, list) or not all(isinstance(b, str) for b in bound):
        raise ValueError("plan event without its domain, time or bound pods")


def _decode(line: bytes) -> dict[str, Any]:
    event = _verified(line)
    if isinstance(event, dict) and event.get("op") in ("plan", "unplan"):
        _check_plan(event)
    elif not isinstance(event, dict) or event.get("op") not in ("bind", "release") or \
            not isinstance(event.get("pod"), str):
        raise ValueError("not a bind, release or gang plan event")
    if "seq" in event and (type(event["seq"]) is not int or event["seq"] < 1):
        raise ValueError("bad sequence number")
    if "gang" in event and not isinstance(event["gang"], str):
        raise ValueError("bad gang")
    if event["op"] == "bind":
        if not isinstance(event.get("args"), dict):
            raise ValueError("bind event without args")
        pod_of(event)   # every field PodArgs needs is there
    return event


def _header(base: int, records: int) -> bytes:
    return V2_PREFIX + _checksummed({"base": base, "records": records}) + b"\n"


def _what(line: bytes) -> str:
    """What damaged bytes still show of their record (pod, sequence number), for the report."""
    pod = re.search(rb'"pod":"((?:[^"\\]|\\.){1,300})"', line)
    seq = re.search(rb'"seq":(\d{1,20})', line)
    found = ([f"seq {int(seq.group(1))}"] if seq else []) + \
        ([f"pod {pod.group(1).decode(errors='replace')}"] if pod else [])
    return f" (it shows {', '.join(found)})" if found else ""


def read(path: str | Path) -> Replay:
    """Replay a journal file, collecting damage in `problems` rather than raising (a missing file
    is an empty journal). Whether the end is complete is for the caller to judge with the mark."""
    path = Path(path)
    replay = Replay()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return replay
    if not data:
        return replay
    lines = data.split(b"\n")
    tail = lines.pop()            # after the last newline: b"" unless the last write was torn
    first = lines[0] if lines else tail
    base: Optional[int] = 0
    compacted = 0
    if first.startswith(V1_HEADER) and lines:
        replay.version = 1
    else:
        replay.version = 2
        try:
            if not lines or not first.startswith(V2_PREFIX):
                raise ValueError("not a journal header" if lines else "cut short")
            begin = _verified(first[len(V2_PREFIX):])
            base, compacted = int(begin["base"]), int(begin["records"])
        except (ValueError, KeyError, TypeError) as e:
            # A header is only ever written by a verified rename: a crash cannot tear it.
            replay.problems.append(f"line 1 (the header) is damaged: {e}")
            base, compacted = None, 0
            if not lines:
                return replay
    last = base or 0
    body = lines[1:]
    for n, line in enumerate(body, start=2):
        in_compacted = n - 1 <= compacted
        try:
            event = _decode(line)
            if replay.version == 1:
                event["seq"] = n - 1
            seq = event.get("seq")
            if seq is None:
                raise ValueError("no sequence number")
            if base is None:          # header lost: take the numbers as they come
                last = max(last, seq)
            elif in_compacted:
                if seq > base:
                    raise ValueError(f"seq {seq} of a compacted record is past the header's {base}")
            elif seq <= last:
                raise ValueError(f"seq {seq} does not follow {last}")
            else:
                if seq > last + 1:
                    replay.problems.append(f"records {last + 1}..{seq - 1} are missing before "
                                           f"line {n}")
                last = seq
        except (ValueError, TypeError) as e:
            if n == len(lines) and not tail and not in_compacted:
                replay.torn = f"line {n} fails its check ({e}){_what(line)}"
                break
            replay.problems.append(f"line {n} is damaged: {e}{_what(line)}")
            continue
        replay.apply(event)
        replay.lines += 1
    if tail:
        where = f"line {len(lines) + 1} has no newline (a write cut short){_what(tail)}"
        if len(lines) <= compacted:
            replay.problems.append(where.replace("has no newline", "is cut short"))
        else:
            replay.torn = where
    if base is not None and len(body) < compacted:
        replay.problems.append(f"the file ends after {len(body)} of the {compacted} compacted "
                               "records its header lists")
    replay.last_seq = last
    return replay


class Journal:
    """An open journal: `open()` checks, replays and compacts it, then events are appended."""

    def __init__(self, path: Path, replay: Replay, lock_fd: int, mark: Optional[Mark],
                 seq: int, fsync: bool = True, compact_min: int = 1024) -> None:
        self.path = path
        # Rewritten once more than max(compact_min, 2 x held) events were appended since the last
        # rewrite: the file stays proportional to what is held, at amortised O(1) per event.
        self.compact_min = compact_min
        self._replay = replay     # kept current: compaction rewrites it
        self._lock_fd = lock_fd
        self._mark = mark
        self._fsync = fsync
        self._lock = threading.Lock()        # file writes and _replay
        # A sync is two stages, pipelined: the journal's fsync (or a compaction) under
        # _sync_lock, then the mark's write under _mark_lock, so one group's mark is written
        # while the next group's fsync runs. Both are taken before _lock.
        self._sync_lock = threading.Lock()
        self._mark_lock = threading.Lock()
        self._fd = -1
        self._seq = seq        # the last sequence number written
        self._durable = seq    # the last one fsynced
        self._synced = seq     # the last one durable and marked (answerable)
        self._since_compaction = 0
        self._compact_after = 0   # after a failed compaction: retried only past this count
        self._failed: Optional[str] = None
        self._compaction_failed: Optional[str] = None
        self.failures: dict[str, int] = {}  # failed writes by kind: write, sync, compaction
        self.lost: list[str] = list(replay.problems)   # losses accepted at the start

    @classmethod
    def open(cls, path: str | Path, fsync: bool = True, compact_min: int = 1024,
             accept_loss: bool = False) -> "Journal":
        """Lock, check against the mark, replay and compact. Raises JournalError when records
        that may have been answered are missing or damaged, unless `accept_loss`."""
        path = Path(path)
        if not path.parent.is_dir():
            raise JournalError(f"journal {path}: its directory {path.parent} does not exist "
                               "(create it first; the journal, its .mark and its .lock go there)")
        lock_fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise JournalError(f"journal {path} is in use by another process") from None
        journal = None
        try:
            replay = read(path)
            mark_path = path.with_name(path.name + ".mark")
            mark = _check_mark(path, mark_path, replay)
            if replay.problems:
                what = "; ".join(replay.problems)
                if not accept_loss:
                    raise JournalError(f"journal {path}: {what}; answered binds may be lost: "
                                       f"{ACCEPT_HINT}")
                log.error("journal %s: %s; going on without them, as accepted", path, what)
            seq = max(replay.last_seq, mark or 0)
            if mark is not None:
                for event in replay.binds.values():
                    if event["seq"] > mark:
                        event["unanswered"] = True
            journal = cls(path, replay, lock_fd, None, seq, fsync, compact_min)
            # The mark may never claim more than the journal holds: a new mark (seq is then what
            # the old file holds) is set before the rewrite, an existing one after it.
            try:
                if mark is None:
                    journal._mark = Mark.open(mark_path, seq, fsync)
                with journal._sync_lock, journal._lock:
                    journal._rewrite()
                    if fsync:
                        fsync_dir(path)
                if mark is not None:
                    journal._mark = Mark.open(mark_path, seq, fsync)
            except OSError as e:
                raise JournalError(f"journal {path}: cannot compact it at start ({e}); a copy "
                                   "replaces it only once written and verified, so nothing in it "
                                   "was lost") from None
        except BaseException:
            if journal is not None:
                journal.close()
            else:
                os.close(lock_fd)
            raise
        return journal

    @property
    def closed(self) -> bool:
        return self._lock_fd < 0

    @property
    def replay(self) -> Replay:
        return self._replay

    def unanswered(self) -> list[str]:
        """Pods whose bind is journalled but was never answered (restored at this start)."""
        with self._lock:
            return [p for p, e in self._replay.binds.items() if e.get("unanswered")]

    def check_ready(self) -> bool:
        """True while events are taken; raises JournalError naming the failure otherwise."""
        if self._failed:
            raise JournalError(f"journal {self.path}: {self._failed}")
        return True

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"path": str(self.path), "held": len(self._replay.binds),
                    "events": self._since_compaction + len(self._replay.events()),
                    "seq": self._seq, "answered_through": self._mark.value if self._mark else 0,
                    "unanswered": sum(1 for e in self._replay.binds.values()
                                      if e.get("unanswered")),
                    "failed": self._failed, "compaction_failed": self._compaction_failed,
                    "write_failures": dict(self.failures), "lost_at_start": list(self.lost)}

    # ---- appends ----------------------------------------------------------------------------
    def record_bind(self, pod: PodArgs, node: str, annotations: dict[str, str],
                    gang: Optional[str] = None) -> None:
        """A bind; `gang`: the topology gang the pod belongs to (gangs.py), if any."""
        self._append(bind_event(pod, node, annotations, gang))

    def record_plan(self, gang: str, slots: dict[str, int], domain: str, made: float,
                    bound: list[str]) -> None:
        """A gang's plan, held until its pods are bound (gangs.py)."""
        self._append(plan_event(gang, slots, domain, made, bound))

    def record_unplan(self, gang: str) -> None:
        """A gang's plan is over: every slot spent."""
        self._append(unplan_event(gang))

    def record_release(self, pod: str, uid: str = "") -> None:
        self._append(release_event(pod, uid))

    def _fail(self, what: str, e: OSError) -> None:
        """Stop taking events (caller holds _lock)."""
        self._failed = f"{what} failed: {e}"
        self.failures[what] = self.failures.get(what, 0) + 1
        log.error("journal %s: %s; every bind is answered with an error until the extender is "
                  "restarted", self.path, self._failed)

    def _append(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._check_failed()
            event["seq"] = self._seq + 1
            line = _encode(event)
            crash_point("append")
            try:
                if faults.due("append-torn"):
                    os.write(self._fd, line[:len(line) // 2])
                    faults.kill()
                write_all(self._fd, line)
            except OSError as e:
                self._fail("write", e)
                raise JournalError(f"journal {self.path}: write failed: {e}") from None
            crash_point("appended")
            self._seq = seq = event["seq"]
            self._replay.apply(event)
            self._since_compaction += 1
        self._sync(seq)

    def _sync(self, seq: int) -> None:
        """Make everything written durable, then marked, once for all waiting appenders."""
        with self._sync_lock:
            if self._durable < seq:
                with self._lock:
                    self._check_failed()
                    compact = self._since_compaction > max(self.compact_min, self._compact_after,
                                                           2 * len(self._replay.binds))
                    target = self._seq
                try:
                    compacted = False
                    if compact:
                        with self._lock:   # no appends while the file is replaced
                            target = self._seq
                            compacted = self._compact()
                    if not compacted and self._fsync:
                        os.fsync(self._fd)
                except OSError as e:
                    # After a failed fsync the page cache may or may not reach the disk: stop.
                    self._sync_failed(e)
                crash_point("synced")
                self._durable = target
        with self._mark_lock:
            if self._synced >= seq:
                return            # another thread's mark covered this line
            with self._lock:
                self._check_failed()
            target = self._durable   # never more than is durable
            try:
                assert self._mark is not None
                self._mark.write(target)
            except OSError as e:
                self._sync_failed(e)
            crash_point("marked")
            self._synced = target

    def _check_failed(self) -> None:
        if self._failed:
            raise JournalError(f"journal {self.path} failed earlier ({self._failed}); "
                               "restart the extender")

    def _sync_failed(self, e: OSError) -> None:
        with self._lock:
            self._fail("sync", e)
        raise JournalError(f"journal {self.path}: sync failed: {e}") from None

    def _compact(self) -> bool:
        """Compact while running (caller holds both locks). False when the copy could not be
        written: the old file, which holds every event, stays in use and the caller fsyncs it."""
        try:
            self._rewrite()
        except OSError as e:
            self._compaction_failed = str(e)
            self.failures["compaction"] = self.failures.get("compaction", 0) + 1
            self._compact_after = self._since_compaction + self.compact_min
            log.warning("journal %s: compaction failed (%s); the journal is unchanged and still "
                        "in use, compaction is retried after %d more events", self.path, e,
                        self.compact_min)
            return False
        self._compaction_failed = None
        if self._fsync:
            fsync_dir(self.path)
        return True

    def _rewrite(self) -> None:
        """Replace the file by its compact form (caller holds both locks). Raises OSError with the
        old file untouched when the copy cannot be written; the directory fsync is the caller's."""
        events = self._replay.events()
        data = b"".join([_header(self._seq, len(events))] + [_encode(e) for e in events])
        old, self._fd = self._fd, replace_verified(self.path, data, self._fsync)
        if old >= 0:
            os.close(old)
        self._since_compaction = 0
        self._compact_after = 0

    def close(self) -> None:
        with self._sync_lock, self._mark_lock, self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._mark is not None:
                self._mark.close()
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1


def _check_mark(path: Path, mark_path: Path, replay: Replay) -> Optional[int]:
    """The mark's value, adding to `replay.problems` what it shows lost; None when there is no
    usable mark (a version 1 journal, a first start, or a mark missing or damaged)."""
    if replay.version == 1:
        log.warning("journal %s is version 1: it has no high-water mark, so a truncation cannot "
                    "be detected (whether its last line was answered is unknown); it is rewritten "
                    "as version %d", path, VERSION)
        if replay.torn:
            log.warning("journal %s: %s; dropped", path, replay.torn)
        return None
    torn = f"; {replay.torn}" if replay.torn else ""
    try:
        mark = Mark.read(mark_path)
    except (OSError, ValueError) as e:
        replay.problems.append(f"{e}, so lost records cannot be ruled out{torn}")
        return None
    if mark is None:
        if replay.version is not None:
            replay.problems.append(f"its high-water mark {mark_path} is missing, so lost records "
                                   f"cannot be ruled out{torn}")
        return None
    if replay.version is None and mark > 0:
        replay.problems.append(f"the file is missing or empty but its high-water mark says "
                               f"records up to {mark} were written before answers")
    elif replay.last_seq < mark:
        replay.problems.append(f"records {replay.last_seq + 1}..{mark} were written before "
                               f"answers (high-water mark {mark}) but the file ends at "
                               f"{replay.last_seq}{torn}")
    elif replay.torn:
        log.warning("journal %s: %s; dropped: it was never answered (answers cover records up to "
                    "%d)", path, replay.torn, mark)
    return mark
