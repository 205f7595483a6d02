"""The Kubernetes source of a `--kube` extender: the rebuild from pod annotations on start, then
list-and-watch of nodes and bound pods, as an informer does.

Each kind (nodes, pods) is listed once, then watched from the list's resourceVersion
(listwatch.py): a watch that ends is resumed from the last version seen, and one that expired
(HTTP 410 Gone) or failed is followed by a fresh list, which is reconciled with the state. A full
re-list also runs every `resync_s` as a safety net. Pod deletions and completions (phase
Succeeded/Failed) release their devices; node additions, changes and deletions are applied as
they arrive, and passed on to the DRA side (--dra, dra.py) too.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable, Iterable, Optional

from . import convert
from .convert import ConvertError, PodArgs
from .listwatch import WatchLoops
from .state import ExtenderState, RebuildReport, holds_a_claim

log = logging.getLogger("gpufleet.extender")

# What the rebuild lists: bound, unfinished pods. Watches use only the first clause, so that a
# pod finishing is seen as an update (its phase) as well as when the server drops it from view.
POD_LIST_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
POD_WATCH_SELECTOR = "spec.nodeName!="
FINISHED = ("Succeeded", "Failed")


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


class KubeWatcher(WatchLoops):
    """Keeps an ExtenderState in step with the API server (one thread per watched kind)."""

    def __init__(self, state: ExtenderState, core_v1: Any, resync_s: float = 300.0,
                 watch_timeout_s: float = 60.0) -> None:
        super().__init__(resync_s, watch_timeout_s)
        self.state, self.api = state, core_v1
        self._node_api_specs: dict[str, dict[str, Any]] = {}   # as converted, to skip no-ops
        self.add("nodes", lambda why: self.relist_nodes(), lambda **kw: self.api.list_node(**kw),
                 self._node_event)
        self.add("pods", lambda why: self.relist_pods(),
                 lambda **kw: self.api.list_pod_for_all_namespaces(
                     field_selector=POD_WATCH_SELECTOR, **kw),
                 self._pod_event)

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
        if self.state.claim_ledger is not None:   # Nodes DRA knows that the list lacks are gone
            self.state.claim_ledger.nodes_listed(seen)
        self.listed("nodes", (data.get("metadata") or {}).get("resourceVersion"))
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
        self.listed("pods", (data.get("metadata") or {}).get("resourceVersion"))
        self._count("pod_lists")
        return report

    # ---- events ----------------------------------------------------------------------------
    def _node_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            return
        st = self.state
        if st.claim_ledger is not None:   # DRA reads every Node, first: its claims may rehold
            st.claim_ledger.node_event(kind, obj)
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

    # ---- watch loops (listwatch.py) -------------------------------------------------------------
    def start(self) -> "KubeWatcher":  # type: ignore[override]
        super().start("gpufleet-watch")
        # Ready while both watch loops run (they retry API failures themselves).
        self.state.ready_checks["kubernetes watches"] = self.alive
        return self


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
