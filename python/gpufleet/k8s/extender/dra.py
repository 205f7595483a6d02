"""DRA behind the extender (``gpufleet extender --kube --dra``): ResourceSlices, DeviceClasses and
ResourceClaims watched into a ``DraCluster`` (claims' ``status.allocation`` is the record, so a
restart rebuilds from the API server), a filter that passes only the nodes where the pod's claims
can be had, and a binder that, before the Binding, allocates the pod's
claims on the chosen node and writes each claim's ``status.allocation`` and ``reservedFor``, as
kube-scheduler's DynamicResources plugin does in PreBind.

**Beside kube-scheduler's own DRA plugin.** With the DynamicResources plugin enabled in the
profile that calls gpufleet, kube-scheduler filters nodes for the claims and writes the
allocation in PreBind, before the extender's bind: gpufleet then finds the claims allocated,
takes them into its ledger and binds. With the plugin disabled in that profile (or gpufleet as
the pods' scheduler), gpufleet chooses the devices, with its scores, and writes them itself.
Either way one component allocates a claim, and the other reads its status.

**One ledger with the pods.** The DraCluster shares the extender's ``gpufleet.Cluster``
(``DraCluster(cluster=...)``, gpufleet/dra/legacy.py): a claim's devices are held there by its
pseudo-pods (``dra:<namespace>/<claim>``), so no pod asking through ``nvidia.com/gpu``,
Koordinator or gpushare/HAMi is offered them, and devices those pods hold are in use for the
claims. The pseudo-pods are the claims' alone: the pod re-list leaves them be, a node that changes
or comes back gets them again from the claims' status, and a list of the DRA objects replaces them
all. A device that a bound pod's annotations and a claim's status both name (kube-scheduler's own
DRA plugin chose it) is a conflict: both are kept held (the pod in the Cluster, the claim in the
DRA ledger and on the rest of its devices), it is logged and shown (the gauge
``gpufleet_extender_claim_conflicts``, /state's ``claim_conflicts``), and the claim holds all its
devices again once the pod is gone. Changes to the Cluster from here run under the extender
state's lock, as its own do.
"""
from __future__ import annotations

import functools
import json
import logging
import threading
from typing import Any, Callable, Optional

from gpufleet.dra.cluster import DraCluster, claim_key
from gpufleet.dra.legacy import PSEUDO_POD_PREFIX
from gpufleet.dra.objects import DraError
from gpufleet.dra.pools import selector_matches

from .listwatch import WatchLoops

log = logging.getLogger(__name__)

KINDS = {"ResourceSlice": "list_resource_slice", "DeviceClass": "list_device_class",
         "ResourceClaim": "list_resource_claim_for_all_namespaces"}


def _raw(resp: Any) -> Any:
    return json.loads(resp.data) if hasattr(resp, "data") else resp


def resource_client() -> Any:
    from gpufleet._extras import require
    client = require("kubernetes.client", "k8s", "the extender's DRA mode (--dra)")
    return client.ResourceV1Api()


class DraSync:
    """Keeps a DraCluster equal to the API server's DRA objects and nodes. With `state` (an
    ExtenderState), the DraCluster shares its Cluster: one ledger for claims and pods.

    Each DRA kind is listed, then watched (listwatch.py, as the pods are); a watch that expired
    or failed is followed by a fresh list of its kind, which replaces the DraCluster: objects the
    list lacks are gone, deleted claims' holds with them. Nodes come from the extender's node
    watch (kube.py: node_event, nodes_listed)."""

    def __init__(self, core_v1: Any, resource_v1: Any, cluster: Optional[DraCluster] = None,
                 state: Any = None, resync_s: float = 300.0, watch_timeout_s: float = 60.0) -> None:
        self.core = core_v1
        self.api = resource_v1
        self.state = state
        # Serialises changes to the shared Cluster with the extender's own (reserve, restore).
        self.lock = state.lock if state is not None else threading.RLock()
        self.cluster = cluster if cluster is not None else self._new_cluster()
        self.conflicts: dict[str, str] = {}   # claim -> why: devices pods outside DRA hold too
        self.nodes: dict[str, dict[str, Any]] = {}   # the Nodes as DRA reads them: name, labels
        # Per kind, name -> resourceVersion of what was listed or watched: a re-list that
        # finds the same replaces nothing.
        self._versions: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
        # Claims this process allocated, with the version they had then: a re-list that shows
        # that version again predates the status write, and keeps the allocation.
        self._written: dict[str, str] = {}
        self.loops = WatchLoops(resync_s, watch_timeout_s)
        for kind in KINDS:
            self.loops.add(kind, functools.partial(self.relist, kind),
                           functools.partial(self._call, kind), functools.partial(self.event, kind))

    def _new_cluster(self) -> DraCluster:
        return DraCluster(cluster=self.state.cluster if self.state is not None else None)

    def _call(self, kind: str, **kw: Any) -> Any:
        return getattr(self.api, KINDS[kind])(**kw)

    def _list(self, kind: str) -> dict[str, Any]:
        return _raw(self._call(kind, _preload_content=False))

    def sync(self) -> DraCluster:
        """Lists nodes, classes, slices and claims (claims with their status) into a fresh
        DraCluster and makes it current; objects gpufleet cannot read are logged and skipped.
        The claims' holds in the shared Cluster are replaced by those of the listed claims."""
        nodes = _raw(self.core.list_node(_preload_content=False)).get("items", [])
        listed = {kind: self._list(kind) for kind in KINDS}
        with self.lock:  # the API calls above are not made under it: binds wait for no I/O
            self.nodes = {m["metadata"]["name"]: m for m in map(_node_meta, nodes) if m}
            objects = {kind: data.get("items") or [] for kind, data in listed.items()}
            objects["ResourceClaim"] = self._kept_writes(objects["ResourceClaim"])
            fresh = self._replace(objects)
            for kind, data in listed.items():
                self.loops.listed(kind, (data.get("metadata") or {}).get("resourceVersion"))
        return fresh

    def relist(self, kind: str, why: str = "resync") -> None:
        """Lists one DRA kind afresh (after its watch expired or failed, or as the resync) and
        replaces what is known of it: objects the list lacks are deleted (a claim's hold with
        it), those it changed are taken as listed, the other kinds are kept. A claim this
        process allocated keeps that allocation if the list shows it as it was before (the list
        predates the status write)."""
        data = self._list(kind)
        items = data.get("items") or []
        listed = {key: _version(o) for o in items if (key := _key(kind, o))}
        with self.lock:
            known = self._versions[kind]
            gone = sorted(set(known) - set(listed))
            changed = sorted(n for n, v in listed.items() if known.get(n) != v)
            for key in gone if kind == "ResourceClaim" else ():
                self._written.pop(key, None)
            if gone or changed:
                if kind == "ResourceClaim":  # claims churn most: only those gone or changed
                    kept = self._kept_writes(items)
                    fresh_keys = set(changed)
                    self._patch_claims(gone, [o for o in kept if _key(kind, o) in fresh_keys])
                    self._versions[kind] = dict(listed)
                else:  # a slice or class changes what every claim verifies against: anew
                    snap = self.cluster.snapshot()
                    objects = {"DeviceClass": snap["classes"], "ResourceSlice": snap["slices"],
                               "ResourceClaim": snap["claims"]}
                    objects[kind] = items
                    self._replace(objects, only=kind)
            self.loops.listed(kind, (data.get("metadata") or {}).get("resourceVersion"))
        log.info("re-list of %s (%s): %d listed, %s", kind, why, len(items),
                 f"{_names(gone)} gone, {_names(changed)} new or changed"
                 if gone or changed else "nothing changed")

    def _kept_writes(self, claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for obj in claims:
            key = _key("ResourceClaim", obj)
            base = self._written.pop(key, None)
            if base is not None and base == _version(obj):
                try:
                    mine = self.cluster.claim(key)
                except KeyError:
                    mine = {}
                if (mine.get("status") or {}).get("allocation"):
                    obj = mine
                    self._written[key] = base   # still to come back through the watch
            out.append(obj)
        return out

    def _patch_claims(self, gone: list[str], changed: list[dict[str, Any]]) -> None:
        """The listed claims in place (under the lock): those gone deleted, their holds with
        them; those changed given back first, so that claims that swapped devices do not refuse
        each other, then taken as listed (one the DraCluster refuses is logged and left out, as
        a rebuild leaves it)."""
        for key in gone:
            try:
                self.cluster.delete("ResourceClaim", key)
            except KeyError:
                pass  # skipped when it was listed
        for obj in changed:
            try:
                self.cluster.release(_key("ResourceClaim", obj))
            except KeyError:
                pass  # new
        for obj in changed:
            try:
                self.cluster.apply({**obj, "kind": "ResourceClaim"}, keep_unheld=True)
            except DraError as e:
                log.warning("skipped: %s", e)
                try:
                    self.cluster.delete("ResourceClaim", _key("ResourceClaim", obj))
                except KeyError:
                    pass
        self._report(self.cluster.unheld())

    def _replace(self, objects: dict[str, list[dict[str, Any]]], only: Optional[str] = None) -> DraCluster:
        """A fresh DraCluster of the nodes and `objects` (per kind) made current, its claims'
        holds in the shared Cluster in place of the previous ones. Under the lock: no bind or
        filter sees half of it, and every claim still present is held once. `only`: the kind
        listed (the others' versions are kept)."""
        if self.state is not None:  # the previous holds: the new objects decide
            for a in list(self.state.cluster.allocations()):
                if a.pod.startswith(PSEUDO_POD_PREFIX):
                    self.state.cluster.release(a.pod)
        fresh = self._new_cluster()
        for node in self.nodes.values():
            fresh.add_node(node)
        for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim"):
            versions = {}
            for obj in objects[kind]:
                try:
                    fresh.apply({**obj, "kind": kind}, keep_unheld=True)
                except DraError as e:
                    log.warning("skipped: %s", e)
                if _key(kind, obj):   # known even if skipped: the same version is skipped again
                    versions[_key(kind, obj)] = _version(obj)
            if only in (None, kind):
                self._versions[kind] = versions
        self.cluster = fresh
        self._report(fresh.unheld())
        return fresh

    def event(self, kind: str, verb: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED or DELETED) of a DRA object."""
        with self.lock:
            key = _key(kind, obj)
            if key:
                if verb == "DELETED":
                    self._versions[kind].pop(key, None)
                else:
                    self._versions[kind][key] = _version(obj)
                if kind == "ResourceClaim":
                    self._written.pop(key, None)   # the server's newer word on it
            try:
                if verb == "DELETED":
                    self.cluster.delete(kind, key)
                else:
                    self.cluster.apply({**obj, "kind": kind}, keep_unheld=True)
            except (DraError, KeyError) as e:
                log.warning("%s %s ignored: %s", kind, verb, e)
            self._report(self.cluster.unheld())

    def node_event(self, verb: str, obj: dict[str, Any]) -> None:
        """A Node added, changed or deleted (the extender's node watch, kube.py). DRA reads its
        name and labels (claims' node selectors); a deleted node's devices are offered no more.
        Called before the extender's Cluster takes the change, so that the claims it holds
        again there (a node that comes back) find the node known."""
        meta = _node_meta(obj)
        if meta is None:
            return
        name = meta["metadata"]["name"]
        with self.lock:
            if verb == "DELETED":
                if self.nodes.pop(name, None) is not None:
                    try:
                        self.cluster.remove_node(name)
                    except KeyError:
                        pass
                    log.info("node %s deleted: DRA offers its devices no more", name)
            elif self.nodes.get(name) != meta:   # heartbeats change neither name nor labels
                new = name not in self.nodes
                self.nodes[name] = meta
                self.cluster.add_node(meta)
                if new and self.state is not None and self.state.cluster.has_node(name):
                    self._report(self.cluster.rehold(name))   # its claims could not hold it yet

    def nodes_listed(self, names: set[str]) -> None:
        """A list of the Nodes (kube.py's re-list) names these: the others are deleted."""
        with self.lock:
            for name in sorted(set(self.nodes) - set(names)):
                self.node_event("DELETED", {"metadata": {"name": name}})

    def wrote(self, claim: str, done: bool = True) -> None:
        """This process allocated `claim` (`done`), or took that back: a re-list that shows the
        claim as it was before keeps the allocation (called under the lock)."""
        if done:
            self._written[claim] = self._versions["ResourceClaim"].get(claim, "")
        else:
            self._written.pop(claim, None)

    def rehold(self, node: Optional[str] = None, first: Optional[Callable[[], None]] = None) -> None:
        """The claims on `node` (or all) held in the shared Cluster again (DraCluster.rehold),
        after `first` (a pod restored before them)."""
        with self.lock:
            self._report(self.cluster.rehold(node, first))

    def pod_released(self, node: str) -> None:
        """A pod on `node` gave its devices back: a claim that shares one with it takes it."""
        if self.conflicts:
            self.rehold(node)

    def _report(self, unheld: dict[str, str]) -> None:
        for claim in sorted(set(unheld) - set(self.conflicts)):
            log.warning("conflict: ResourceClaim %s names devices that bound pods hold too; "
                        "both stay held: %s", claim, unheld[claim])
        for claim in sorted(set(self.conflicts) - set(unheld)):
            log.info("ResourceClaim %s holds all its devices again", claim)
        self.conflicts = unheld

    def start(self) -> "DraSync":
        self.loops.start("dra-watch")
        if self.state is not None:
            self.state.ready_checks["DRA watches"] = self.loops.alive
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self.loops.stop(timeout_s)


def _key(kind: str, obj: dict[str, Any]) -> str:
    """The name DraCluster files `obj` under (namespace/name for a claim); "" if it has none."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return ""
    return claim_key(obj) if kind == "ResourceClaim" else meta["name"]


def _names(keys: list[str], shown: int = 5) -> str:
    """How many, and the first few by name (a log line stays short)."""
    if not keys:
        return "0"
    return f"{len(keys)} ({', '.join(keys[:shown])}{', ...' if len(keys) > shown else ''})"


def _version(obj: dict[str, Any]) -> str:
    """The object's resourceVersion (its text where it has none: objects built by hand)."""
    return obj["metadata"].get("resourceVersion") or json.dumps(obj, sort_keys=True)


def _node_meta(node: Any) -> Optional[dict[str, Any]]:
    """What DRA reads of a Node: its name and labels."""
    meta = node.get("metadata") if isinstance(node, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    return {"metadata": {"name": meta["name"], "labels": dict(meta.get("labels") or {})}}


class DraBinder:
    """Allocates and records the pod's claims, then lets `inner` bind (annotations, Binding)."""

    def __init__(self, inner: Any, sync: DraSync, pod_reader: Callable[[str, str], dict[str, Any]]) -> None:
        self.inner = inner
        self.sync = sync
        self.read_pod = pod_reader
        self.blocking = True

    def bind(self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]) -> None:
        cluster = self.sync.cluster
        pod = self.read_pod(namespace, name)
        claims = pod_claims(pod)
        pending = [c for c in claims if not (cluster.claim(c).get("status") or {}).get("allocation")]
        written: list[str] = []
        if pending:
            try:
                out = cluster.allocate(pending, node)
            except (KeyError, DraError) as e:  # changed since it was read (deleted, allocated)
                return str(e.args[0] if e.args else e)
            if not out.ok:
                raise DraError(f"pod {namespace}/{name}: claims {', '.join(pending)} on {node}: "
                               f"{out.verdict}: {out.reason}")
            owner = [{"resource": "pods", "name": name, "uid": uid}]
            try:
                for claim, allocation in zip(pending, out.results):
                    ns, cname = claim.split("/", 1)
                    # Recorded here first: a device another bind took meanwhile (a claim, or a
                    # pod in the shared Cluster) is refused before anything reaches the server.
                    with self.sync.lock:  # the current DraCluster: a re-list may have replaced it
                        self.sync.cluster.commit(claim, allocation, reserved_for=owner)
                        self.sync.wrote(claim)
                    written.append(claim)
                    self.sync.api.patch_namespaced_resource_claim_status(
                        cname, ns, {"status": {"allocation": allocation, "reservedFor": owner}})
            except Exception:
                self._undo(written)
                raise
        try:
            self.inner.bind(namespace, name, uid, node, annotations)
        except Exception:
            self._undo(written)
            raise

    def _undo(self, claims: list[str]) -> None:
        for claim in claims:
            ns, cname = claim.split("/", 1)
            try:
                self.sync.api.patch_namespaced_resource_claim_status(
                    cname, ns, {"status": {"allocation": None, "reservedFor": None}})
            except Exception as e:  # noqa: BLE001 - the watch will show what the server holds
                log.warning("claim %s could not be released: %s", claim, e)
            with self.sync.lock:
                self.sync.wrote(claim, done=False)
                self.sync.cluster.release(claim)


class ClaimsFilter:
    """The filter's say on a pod's claims: a node passes only where every claim the pod names
    can be had there. A claim not known yet fails every node (it may be created soon); a claim
    allocated already passes the nodes its allocation's node selector admits; the claims not
    allocated yet pass the nodes where they can be allocated together now
    (DraCluster.allocatable: alike nodes asked once, nothing recorded: the bind allocates them)."""

    def __init__(self, sync: DraSync) -> None:
        self.sync = sync

    def narrow(self, pod: dict[str, Any], passed: list[str], failed: dict[str, str]) -> list[str]:
        """`passed` less the nodes the claims refuse, each added to `failed` with why."""
        claims = pod_claims(pod) if isinstance(pod, dict) and isinstance(pod.get("metadata"), dict) else []
        if not claims or not passed:
            return passed
        cluster = self.sync.cluster
        pending: list[str] = []
        selectors: list[tuple[str, dict[str, Any]]] = []
        for name in claims:
            try:
                allocation = (cluster.claim(name).get("status") or {}).get("allocation")
            except KeyError:
                failed.update({n: f"ResourceClaim {name}: not found" for n in passed})
                return []
            if not allocation:
                pending.append(name)
            elif allocation.get("nodeSelector"):
                selectors.append((name, allocation["nodeSelector"]))
        reachable = []
        for n in passed:
            why = self._refusal(cluster, n, selectors)
            if why:
                failed[n] = why
            else:
                reachable.append(n)
        if not pending or not reachable:
            return reachable
        try:  # alike nodes are asked once
            outcomes = cluster.allocatable(pending, reachable)
        except (KeyError, DraError) as e:  # changed since it was read (deleted, allocated)
            failed.update({n: str(e.args[0] if e.args else e) for n in reachable})
            return []
        out = []
        for n in reachable:
            if outcomes[n]:
                failed[n] = f"claims {', '.join(pending)}: {outcomes[n]}"
            else:
                out.append(n)
        return out

    @staticmethod
    def _refusal(cluster: DraCluster, node: str, selectors: list[tuple[str, dict[str, Any]]]) -> str:
        try:
            obj = cluster.node(node)
        except KeyError:
            return f"node {node} is not known to DRA (no Node object listed)"
        for name, selector in selectors:
            if not selector_matches(selector, obj):
                return f"ResourceClaim {name} is allocated on devices this node cannot reach"
        return ""


def pod_claims(pod: dict[str, Any]) -> list[str]:
    """The pod's ResourceClaims as namespace/name: named ones, and those the control plane
    generated from templates (status.resourceClaimStatuses)."""
    ns = pod["metadata"].get("namespace", "default")
    generated = {s["name"]: s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    out = []
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = ref.get("resourceClaimName") or generated.get(ref["name"])
        if name:
            out.append(f"{ns}/{name}")
    return out


def enable(state: Any, core_v1: Any = None, resource_v1: Any = None,
           resync_s: float = 300.0) -> DraSync:
    """Turns DRA on for an extender state: lists the DRA objects into a DraCluster that shares
    the state's Cluster (claims are held after the pods restored from annotations) and wraps its
    binder. The sync it returns is not started yet (its watches re-list every `resync_s` too)."""
    core_v1 = core_v1 if core_v1 is not None else getattr(state.binder, "api", None)
    resource_v1 = resource_v1 if resource_v1 is not None else resource_client()
    sync = DraSync(core_v1, resource_v1, state=state, resync_s=resync_s)
    sync.sync()
    state.claim_ledger = sync
    state.binder = DraBinder(state.binder, sync,
                             lambda ns, name: _raw(core_v1.read_namespaced_pod(name, ns, _preload_content=False)))
    state.claims_filter = ClaimsFilter(sync)
    return sync
