"""The Kubernetes source of a `--kube` extender: the rebuild from pod annotations on start, then
list-and-watch of nodes and bound pods, as an informer does.

Each kind (nodes, pods) is listed once, then watched from the list's resourceVersion; a watch that
ends is resumed from the last version seen, and one that expired (HTTP 410 Gone, or an ERROR
event) is replaced by a fresh list, which is reconciled with the state. A full re-list also runs
every `resync_s` as a safety net. Pod deletions and completions (phase Succeeded/Failed) release
their devices; node additions, changes and deletions are applied as they arrive.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Optional

from . import convert
from .convert import ConvertError, PodArgs
from .state import ExtenderState, RebuildReport, holds_a_claim

log = logging.getLogger("gpufleet.extender")

# What the rebuild lists: bound, unfinished pods. Watches use only the first clause, so that a
# pod finishing is seen as an update (its phase) as well as when the server drops it from view.
POD_LIST_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
POD_WATCH_SELECTOR = "spec.nodeName!="
FINISHED = ("Succeeded", "Failed")


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


def kube_client() -> Any:
    """CoreV1Api of the official client: in-cluster config, else the local kubeconfig."""
    from gpufleet._extras import require
    require("kubernetes", "k8s", "the extender's cluster mode (--kube)")
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.CoreV1Api()


def _raw(resp: Any) -> Any:
    return json.loads(resp.data)


def read_pod_object(core_v1: Any, namespace: str, name: str) -> dict[str, Any]:
    """The pod's JSON as the API server has it now (raises on any API error): what the bind
    checks in guard.py compare the request with."""
    return _raw(core_v1.read_namespaced_pod(name, namespace, _preload_content=False))


def _pods(items: Iterable[dict[str, Any]]) -> list[PodArgs]:
    out = []
    for p in items:
        try:
            out.append(convert.pod_args(p))
        except ConvertError as e:
            log.warning("pod skipped: %s", e)
    return out


def reconcile(state: ExtenderState, live: Iterable[PodArgs], listed_at_ns: int,
              grace_ns: Optional[int] = None) -> dict[str, Any]:
    """Bring the held allocations in line with the API server's bound pods, which are the truth.
    A Bound allocation whose pod is not listed bound (deleted, finished, or never bound: its
    annotations written but no nodeName) is released, unless this process bound it within
    `grace_ns` (default: the state's hold timeout) before `listed_at_ns`, when the list was
    requested, since the list may predate the Binding. One whose pod is listed bound to another
    node, or under another uid (re-created), is moved: released here and restored from the listed
    pod's annotations, as is every annotated bound pod gpufleet does not hold. The holds of
    ResourceClaims (--dra) are left as they are: their claims' status decides them."""
    if grace_ns is None:
        grace_ns = int(state.hold_timeout_s * 1e9)
    bound = {p.name: p for p in live if p.node_name}
    released, moved = [], []
    with state.lock:
        for a in list(state.cluster.allocations()):
            if a.state != "Bound" or holds_a_claim(a.pod):
                continue   # (a claim's hold follows its status, not the pods: dra.py)
            p = bound.get(a.pod)
            held = state.held.get(a.pod)
            if p is None:
                if state.bound_at.get(a.pod, 0) < listed_at_ns - grace_ns:
                    state.release_pod(a.pod)
                    released.append(a.pod)
            elif p.node_name != a.node or (held is not None and held.uid and p.uid and
                                           held.uid != p.uid):
                state.release_pod(a.pod)
                moved.append(a.pod)
        unknown = [p for p in bound.values() if state.cluster.allocation(p.name) is None]
    if moved:
        log.warning("pods bound elsewhere than gpufleet held them (or re-created): %s; their "
                    "holds follow the API server", moved)
    report = state.restore_bound(unknown)
    return {"released": released, "moved": moved, "restored": report.restored, "report": report}


class KubeWatcher:
    """Keeps an ExtenderState in step with the API server (one thread per watched kind)."""

    def __init__(self, state: ExtenderState, core_v1: Any, resync_s: float = 300.0,
                 watch_timeout_s: float = 60.0) -> None:
        self.state, self.api = state, core_v1
        self.resync_s = resync_s
        self.watch_timeout_s = max(1.0, min(watch_timeout_s, resync_s))
        self._rv: dict[str, Optional[str]] = {"nodes": None, "pods": None}
        self._listed_at: dict[str, float] = {"nodes": 0.0, "pods": 0.0}
        self._node_api_specs: dict[str, dict[str, Any]] = {}   # as converted, to skip no-ops
        self._stop = threading.Event()
        self._responses: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self.counters: dict[str, int] = {}

    # ---- lists ---------------------------------------------------------------------------
    def sync(self) -> RebuildReport:
        """List nodes, then bound pods, and reconcile the state with them (the start's rebuild)."""
        self.relist_nodes()
        return self.relist_pods()

    def relist_nodes(self) -> None:
        data = _raw(self.api.list_node(_preload_content=False))
        seen = set()
        for n in data.get("items") or []:
            name = (n.get("metadata") or {}).get("name")
            if name:
                seen.add(name)
                self._node_event("ADDED", n)
        for name in list(self.state.node_specs):
            if name not in seen:
                self._node_event("DELETED", {"metadata": {"name": name}})
        self._rv["nodes"] = (data.get("metadata") or {}).get("resourceVersion")
        self._listed_at["nodes"] = time.monotonic()
        self._count("node_lists")

    def relist_pods(self) -> RebuildReport:
        t = time.time_ns()
        data = _raw(self.api.list_pod_for_all_namespaces(field_selector=POD_LIST_SELECTOR,
                                                         _preload_content=False))
        out = reconcile(self.state, _pods(data.get("items") or []), t)
        if out["released"]:
            log.info("re-list: released %s", out["released"])
        report: RebuildReport = out["report"]
        self.state.rebuild.merge(report)
        self._rv["pods"] = (data.get("metadata") or {}).get("resourceVersion")
        self._listed_at["pods"] = time.monotonic()
        self._count("pod_lists")
        return report

    # ---- events ----------------------------------------------------------------------------
    def _node_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            return
        st = self.state
        if kind == "DELETED":
            self._node_api_specs.pop(name, None)
            try:
                gone = st.remove_node(name)
            except ValueError as e:
                self._retry(lambda: self._node_event(kind, obj), e)
                return
            log.info("node %s deleted; released %s", name, gone)
            return
        try:
            spec = convert.node_spec(obj)
        except ConvertError as e:
            log.warning("node skipped: %s", e)
            return
        if self._node_api_specs.get(name) == spec and st.cluster.has_node(name):
            return   # a status heartbeat: nothing gpufleet reads changed
        try:
            refused = st.replace_node(spec)
        except ValueError as e:
            if "in flight" in str(e):
                self._retry(lambda: self._node_event(kind, obj), e)
            else:
                log.warning("node %s update skipped: %s", name, e)
            return
        self._node_api_specs[name] = spec
        if refused:
            log.warning("node %s changed; its new spec no longer holds %s (released)", name,
                        refused)

    def _retry(self, fn: Callable[[], None], why: Exception) -> None:
        # A bind on the node is between reserve and commit (milliseconds): apply right after.
        log.debug("retrying: %s", why)
        if not self._stop.is_set():
            t = threading.Timer(0.05, fn)
            t.daemon = True
            t.start()

    def _pod_event(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        ns, name, uid = meta.get("namespace") or "default", meta.get("name"), meta.get("uid") or ""
        if not isinstance(name, str) or not name:
            return
        key = f"{ns}/{name}"
        st = self.state
        phase = (obj.get("status") or {}).get("phase")
        if kind == "DELETED" or phase in FINISHED:
            if st.release_pod(key, uid, defer=True):
                log.info("pod %s %s: devices released", key,
                         "deleted" if kind == "DELETED" else phase.lower())
            return
        if not (obj.get("spec") or {}).get("nodeName"):
            return
        with st.lock:
            known = st.cluster.allocation(key) is not None
            held = st.held.get(key)
        if known:
            node = obj["spec"]["nodeName"]
            if not (held is not None and ((held.uid and uid and held.uid != uid) or
                                          held.node_name != node)):
                return    # ours already (our own Binding coming back, or an update)
            # A pod re-created under the same name, or bound elsewhere than we hold it: the API
            # server is the truth, the hold follows it.
            st.release_pod(key)
        try:
            pods = [convert.pod_args(obj)]
        except ConvertError as e:
            log.warning("pod skipped: %s", e)
            return
        report = st.restore_bound(pods)
        st.rebuild.merge(report)
        if report.restored:
            log.info("pod %s: allocation restored from its annotations", key)

    # ---- watch loops -------------------------------------------------------------------------
    def start(self) -> "KubeWatcher":
        for kind in ("nodes", "pods"):
            t = threading.Thread(target=self._run, args=(kind,), name=f"gpufleet-watch-{kind}",
                                 daemon=True)
            t.start()
            self._threads.append(t)
        # Ready while both watch loops run (they retry API failures themselves).
        self.state.ready_checks["kubernetes watches"] = (
            lambda: not self._stop.is_set() and all(t.is_alive() for t in self._threads))
        return self

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
        backoff = 0.2
        while not self._stop.is_set():
            try:
                if self._rv[kind] is None or \
                        time.monotonic() - self._listed_at[kind] > self.resync_s:
                    self.relist_nodes() if kind == "nodes" else self.relist_pods()
                self._watch(kind)
                backoff = 0.2
            except WatchExpired as e:
                log.info("%s watch expired (%s); listing again", kind, e)
                self._rv[kind] = None
                self._count(f"{kind}_expired")
            except Exception as e:  # noqa: BLE001 - an API hiccup must not end the watch
                if self._stop.is_set():
                    return
                status = getattr(e, "status", None)
                if status == 410:
                    self._rv[kind] = None
                    self._count(f"{kind}_expired")
                    continue
                log.warning("%s watch failed (%s: %s); retrying in %.1f s", kind,
                            type(e).__name__, e, backoff)
                self._count(f"{kind}_watch_errors")
                self._stop.wait(backoff)
                backoff = min(10.0, backoff * 2)

    def _watch(self, kind: str) -> None:
        kw: dict[str, Any] = dict(watch=True, resource_version=self._rv[kind],
                                  allow_watch_bookmarks=True,
                                  timeout_seconds=int(self.watch_timeout_s),
                                  _request_timeout=self.watch_timeout_s + 10,
                                  _preload_content=False)
        if kind == "nodes":
            resp = self.api.list_node(**kw)
            handle = self._node_event
        else:
            resp = self.api.list_pod_for_all_namespaces(field_selector=POD_WATCH_SELECTOR, **kw)
            handle = self._pod_event
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


def load_kube(core_v1: Any = None, resync_s: float = 300.0, watch_timeout_s: float = 60.0,
              **state_kwargs: Any) -> tuple[ExtenderState, RebuildReport, KubeWatcher]:
    """State from the Kubernetes API: every node, then every bound, unfinished pod's annotations.
    Uses the official client unless a CoreV1Api-like object is given. The watcher it returns is
    not started yet."""
    from .binder import KubeBinder

    if core_v1 is None:
        core_v1 = kube_client()

    def pod_source(ns: str, name: str) -> Optional[PodArgs]:
        try:
            return convert.pod_args(_raw(core_v1.read_namespaced_pod(name, ns,
                                                                      _preload_content=False)))
        except Exception as e:  # noqa: BLE001 - any API failure means "not found" to bind
            log.warning("pod %s/%s could not be read: %s", ns, name, e)
            return None

    state_kwargs.setdefault("binder", KubeBinder(core_v1))
    state = ExtenderState(pod_source=pod_source, **state_kwargs)
    watcher = KubeWatcher(state, core_v1, resync_s, watch_timeout_s)
    report = watcher.sync()
    report.log("pod annotations")
    return state, report, watcher
