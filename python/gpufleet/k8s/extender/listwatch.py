"""List-then-watch loops, as an informer runs them, for the kinds the `--kube` extender follows
(kube.py: nodes and pods; dra.py: ResourceSlices, DeviceClasses and ResourceClaims).

Each kind is listed, then watched from the list's resourceVersion, in a thread of its own. A watch
that ends (the server's timeout) is resumed from the last version seen. One that expired (HTTP 410
Gone, or an ERROR event with code 410) or failed (another ERROR event, an API error, a dropped
connection) is followed by a fresh list, which replaces what the kind's owner knows: events missed
meanwhile, deletions included, are not lost. After a failure the loop waits first (0.2 s, doubling
to 10 s). A fresh list also runs every `resync_s` as a safety net.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable, Iterator, NamedTuple, Optional

log = logging.getLogger("gpufleet.extender")


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


class Kind(NamedTuple):
    # (why) -> None: lists the kind, replaces what is known with the list, and calls
    # WatchLoops.listed(kind, the list's resourceVersion).
    relist: Callable[[str], Any]
    # The kind's list call (a CoreV1Api or ResourceV1Api method, filters bound): called with
    # watch=True and _preload_content=False, it returns the streaming response.
    watch: Callable[..., Any]
    handle: Callable[[str, dict[str, Any]], None]   # (ADDED|MODIFIED|DELETED, object)


class WatchLoops:
    """One list-then-watch loop per added kind (start() runs each in a thread)."""

    def __init__(self, resync_s: float = 300.0, watch_timeout_s: float = 60.0) -> None:
        self.resync_s = resync_s
        self.watch_timeout_s = max(1.0, min(watch_timeout_s, resync_s))
        self._kinds: dict[str, Kind] = {}
        self._rv: dict[str, Optional[str]] = {}
        self._listed_at: dict[str, float] = {}
        self._why: dict[str, str] = {}           # why the next list runs, when not a resync
        self._backoff: dict[str, float] = {}
        self._stop = threading.Event()
        self._responses: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self.counters: dict[str, int] = {}

    def add(self, kind: str, relist: Callable[[str], Any], watch: Callable[..., Any],
            handle: Callable[[str, dict[str, Any]], None]) -> None:
        self._kinds[kind] = Kind(relist, watch, handle)
        self._rv.setdefault(kind, None)
        self._listed_at.setdefault(kind, 0.0)

    def listed(self, kind: str, resource_version: Optional[str]) -> None:
        """A list of `kind` was applied: its watch resumes from `resource_version`."""
        self._rv[kind] = resource_version
        self._listed_at[kind] = time.monotonic()

    def start(self, name: str) -> "WatchLoops":
        for kind in self._kinds:
            t = threading.Thread(target=self._run, args=(kind,), name=f"{name}-{kind}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def alive(self) -> bool:
        """Every loop runs (they retry API failures themselves): the readiness of the watches."""
        return not self._stop.is_set() and bool(self._threads) and all(t.is_alive() for t in self._threads)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        for resp in list(self._responses.values()):
            try:
                resp.shutdown()   # unblocks a read waiting for the next event
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        for t in self._threads:
            t.join(timeout=timeout_s)

    def _count(self, what: str) -> None:
        self.counters[what] = self.counters.get(what, 0) + 1

    def _run(self, kind: str) -> None:
        while not self._stop.is_set():
            wait = self.step(kind)
            if wait and self._stop.wait(wait):
                return

    def step(self, kind: str) -> float:
        """A list if one is due, then one watch of `kind` until it ends. Returns the seconds to
        wait before the next step: 0 unless it failed."""
        try:
            if self._rv[kind] is None or time.monotonic() - self._listed_at[kind] > self.resync_s:
                why = self._why.get(kind) or ("start" if self._rv[kind] is None else "resync")
                self._kinds[kind].relist(why)
                self._why.pop(kind, None)
            self._watch(kind)
            self._backoff.pop(kind, None)
            return 0.0
        except Exception as e:  # noqa: BLE001 - an API hiccup must not end the loop
            if self._stop.is_set():
                return 0.0
            self._rv[kind] = None   # whatever ended it, the next watch starts from a fresh list
            if isinstance(e, WatchExpired) or getattr(e, "status", None) == 410:
                log.info("%s watch expired (%s); listing again", kind, e)
                self._why[kind] = "watch expired"
                self._count(f"{kind}_expired")
                return 0.0
            backoff = self._backoff.get(kind, 0.2)
            log.warning("%s list or watch failed (%s: %s); listing again in %.1f s", kind,
                        type(e).__name__, e, backoff)
            self._why[kind] = f"watch failed: {type(e).__name__}"
            self._count(f"{kind}_watch_errors")
            self._backoff[kind] = min(10.0, backoff * 2)
            return backoff

    def _watch(self, kind: str) -> None:
        resp = self._kinds[kind].watch(watch=True, resource_version=self._rv[kind],
                                       allow_watch_bookmarks=True,
                                       timeout_seconds=int(self.watch_timeout_s),
                                       _request_timeout=self.watch_timeout_s + 10,
                                       _preload_content=False)
        handle = self._kinds[kind].handle
        self._responses[kind] = resp
        try:
            for line in _lines(resp):
                if self._stop.is_set():
                    return
                event = json.loads(line)
                typ, obj = event.get("type"), event.get("object") or {}
                if typ == "ERROR":
                    if obj.get("code") == 410:
                        raise WatchExpired(obj.get("message", "410 Gone"))
                    raise RuntimeError(f"watch error event: {obj}")
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if typ != "BOOKMARK":
                    self._count(f"{kind}_events")
                    try:
                        handle(typ, obj)
                    except Exception:  # noqa: BLE001 - one bad object must not stop the watch
                        log.exception("%s event %s failed", kind, typ)
                if rv:
                    self._rv[kind] = rv
        finally:
            self._responses.pop(kind, None)
            resp.release_conn()


def _lines(resp: Any) -> Iterator[bytes]:
    """The newline-separated JSON events of a watch response, as they arrive."""
    buf = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line, buf = buf[:i], buf[i + 1:]
            if line.strip():
                yield line
