"""Test-only crash points: kill the process between two steps of a durable write.

`GPUFLEET_EXTENDER_FAULT=<point>[@<n>]` makes the n-th arrival (default the first) at that point
send SIGKILL to the process itself, so tests can crash the extender between any two steps of a
bind without racing a timer. This variable is read here and nowhere else; never set it in
production. Points (journal.py, durable.py):

- `append`: before a journal line is written;
- `append-torn`: half the line written (a write cut short);
- `appended`: the whole line written, not fsynced;
- `synced`: the journal fsynced, its high-water mark not yet written;
- `marked`: the mark written and fsynced, before the bind is committed and answered;
- `compact-written`: a compacted copy written and verified, before the rename;
- `compact-renamed`: renamed over the journal, before the directory fsync.
"""
from __future__ import annotations

import os
import signal

ENV = "GPUFLEET_EXTENDER_FAULT"

_point, _, _nth = os.environ.get(ENV, "").partition("@")
_left = int(_nth) if _nth.isdigit() else 1


def due(point: str) -> bool:
    """Whether this arrival at `point` is the one that should crash (counts arrivals)."""
    global _left
    if not _point or point != _point:
        return False
    _left -= 1
    return _left == 0


def kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def crash_point(point: str) -> None:
    if due(point):
        kill()
