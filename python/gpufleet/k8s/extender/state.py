"""The extender's state: one gpufleet.Cluster plus the caches the protocol needs, and the scenario
source that fills it (the Kubernetes source is in kube.py), including the rebuild after a restart.

Every allocation is rebuilt from a durable record with Cluster.restore_allocation: the pod's own
annotations in a cluster (written before the Binding), the journal beside a scenario file
(journal.py). A device handed out before a restart is never handed out again.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from . import convert
from .binder import Binder, MemoryBinder
from .convert import ConvertError, PodArgs
from .gangs import GangDomains
from .journal import Journal, JournalError, pod_of
from ..keys import GPUSHARE_ASSUME_TIME as ANN_GPUSHARE_ASSUME_TIME
from ..keys import GPUSHARE_IDX as ANN_GPUSHARE_IDX
from ..keys import KOORD_DEVICE_ALLOCATED as ANN_DEVICE_ALLOCATED

log = logging.getLogger("gpufleet.extender")

# How long a hold the scheduler was never answered for waits for the scheduler's retry: a bind
# journalled but not answered before a restart (scenario mode), or, with --kube, a pod this
# process bound that the API server does not show bound there (its list may predate the Binding).
HOLD_TIMEOUT_S = 60.0
HOLD_TIMEOUT_MAX_S = 86_400.0   # a day: a hold keeps devices from every other pod while it waits


def check_hold_timeout(seconds: Any) -> None:
    """ValueError unless `seconds` is a positive hold timeout of at most HOLD_TIMEOUT_MAX_S (the
    command line asks for at least a second)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not 0 < seconds <= HOLD_TIMEOUT_MAX_S:
        raise ValueError(f"hold_timeout_s: {seconds!r} is out of range: more than 0, at most "
                         f"{HOLD_TIMEOUT_MAX_S:,.0f} seconds")


def holds_a_claim(pod: str) -> bool:
    """Whether a Cluster allocation is a ResourceClaim's hold (--dra, dra.py), not a pod's."""
    from gpufleet.dra.legacy import PSEUDO_POD_PREFIX

    return pod.startswith(PSEUDO_POD_PREFIX)


def _gpufleet_api() -> Any:
    import gpufleet  # lazy so convert/protocol stay importable without the native core

    return gpufleet


class PodCache:
    """Bounded LRU of pods seen in filter/prioritize, found again by uid or namespace/name."""

    def __init__(self, capacity: int = 20000) -> None:
        self.capacity = capacity
        self._by_key: OrderedDict[str, PodArgs] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, pod: PodArgs) -> None:
        with self._lock:
            for k in (pod.name, pod.uid and f"uid:{pod.uid}"):
                if k:
                    self._by_key[k] = pod
                    self._by_key.move_to_end(k)
            while len(self._by_key) > self.capacity:
                self._by_key.popitem(last=False)

    def get(self, uid: str, name: str) -> Optional[PodArgs]:
        with self._lock:
            pod = self._by_key.get(f"uid:{uid}") if uid else None
            if pod is None:
                pod = self._by_key.get(name)
                # A stale entry of a pod re-created under the same name must not be used.
                if pod is not None and uid and pod.uid and pod.uid != uid:
                    pod = None
            return pod


PodSource = Callable[[str, str], Optional[PodArgs]]  # (namespace, name) -> pod or None


@dataclass
class PriorBind:
    """ExtenderState.prior_bind's answer: action new, done, confirm, moved or error. For confirm
    and moved, what the pod's hold had before, so that a refused bind puts it back as it was."""
    action: str
    held: Optional[PodArgs] = None
    error: str = ""
    assume_time_ns: int = 0
    bound_at: Optional[int] = None
    deadline: Optional[float] = None   # its wait for the scheduler's retry (unanswered)


@dataclass
class RebuildReport:
    restored: list[str] = field(default_factory=list)
    # Bound pods without allocation annotations: their devices are unknown to gpufleet.
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (pod, why)
    # Pods whose annotations the core refused (unknown node or device, over-commit, annotations
    # that disagree with the request): not trusted, their devices stay free.
    refused: list[tuple[str, str]] = field(default_factory=list)   # (pod, why)

    def merge(self, other: "RebuildReport") -> None:
        """Add another pass's findings (a pod reported again is listed once)."""
        for mine, theirs in ((self.restored, other.restored), (self.skipped, other.skipped),
                             (self.refused, other.refused)):
            known = set(mine)
            mine += [x for x in theirs if x not in known]

    def summary(self) -> dict[str, Any]:
        return {"restored": len(self.restored),
                "refused": [{"pod": p, "reason": r} for p, r in self.refused],
                "skipped": [{"pod": p, "reason": r} for p, r in self.skipped]}

    def log(self, source: str) -> None:
        log.info("rebuild from %s: %d allocations restored, %d pods refused, %d skipped",
                 source, len(self.restored), len(self.refused), len(self.skipped))
        if self.refused:
            log.warning("rebuild from %s: %d pods refused (their devices stay free): %s", source,
                        len(self.refused), "; ".join(f"{p}: {r}" for p, r in self.refused))


class ExtenderState:
    """Everything a request handler touches. Cluster calls are serialised by `lock`."""

    def __init__(self, cluster: Any = None, *, api: Any = None, strategy: str = "binpack",
                 binder: Optional[Binder] = None, pod_source: Optional[PodSource] = None,
                 gpushare_annotations: str = "auto", pod_cache_size: int = 20000,
                 hold_timeout_s: float = HOLD_TIMEOUT_S, topology: Any = None,
                 topology_fit: str = "best-fit") -> None:
        self.api = api if api is not None else _gpufleet_api()
        self.cluster = cluster if cluster is not None else self.api.Cluster()
        from gpufleet.registries import check_strategy

        check_strategy(strategy)   # name and parameters: a bad spec would fail every request
        check_hold_timeout(hold_timeout_s)
        self.strategy = strategy
        self.binder: Binder = binder if binder is not None else MemoryBinder()
        self.pod_source = pod_source
        if gpushare_annotations not in ("auto", "always", "never"):
            raise ValueError("gpushare_annotations must be auto, always or never")
        self.gpushare_annotations = gpushare_annotations
        self.lock = threading.RLock()
        self.pods = PodCache(pod_cache_size)
        self.node_specs: dict[str, dict[str, Any]] = {}
        self.uid_to_pod: dict[str, str] = {}   # allocation owners by uid, for preempt victims
        self.bound_at: dict[str, int] = {}     # pod -> Unix ns when this process bound it
        # Bound pods as restore_allocation needs them again (node_name and allocation annotations
        # set): a node that changes is rebuilt from these.
        self.held: dict[str, PodArgs] = {}
        self.journal: Optional[Journal] = None   # scenario mode's durable record
        self.rebuild = RebuildReport()
        self.manual_release = False   # the release verb stands in for pod deletion (scenario)
        self._gone: dict[str, str] = {}   # pod -> uid: deleted while its bind was in flight
        self.counters: dict[str, int] = {}
        # Handler time (body read, JSON, work, response built) of the latest requests, per verb.
        self.latency_s: dict[str, deque[float]] = {}
        # Gangs placed by network topology (gangs.py): only with a topology (levels or HyperNodes).
        self.gangs: Optional[GangDomains] = (GangDomains(topology, topology_fit)
                                             if topology is not None else None)
        # --dra: narrows the filter's nodes to those where the pod's claims can be had (dra.py).
        self.claims_filter: Any = None
        # --dra: the claims' holds in this Cluster (dra.DraSync): held again when a node changes
        # or comes back, and set aside for a pod restored from annotations that names them.
        self.claim_ledger: Any = None
        # Named readiness checks for /readyz beyond "the state is loaded" (the Kubernetes watches).
        self.ready_checks: dict[str, Callable[[], bool]] = {}
        self.hold_timeout_s = hold_timeout_s
        # Binds journalled but never answered, restored at the start: pod -> monotonic deadline.
        self.unanswered: dict[str, float] = {}

    # ---- nodes and pods -------------------------------------------------------------------
    def add_node(self, spec: dict[str, Any]) -> None:
        """Add a node (ValueError if the name exists or the spec is invalid)."""
        with self.lock:
            self.cluster.add_node(spec)
            # The core's normalised spec: `gpus:` shorthand expanded, defaults filled in.
            self.node_specs[spec["name"]] = self.cluster.node(spec["name"])

    def make_pod(self, args: PodArgs) -> Any:
        """gpufleet.Pod for these arguments; ValueError names the violated request rule."""
        return self.api.Pod(**args.kwargs())

    def find_pod(self, namespace: str, name: str, uid: str) -> Optional[PodArgs]:
        """The pod a bind names: from filter/prioritize's cache, else the pod as held (a bind
        retried after a restart, same name and uid), else the pod source."""
        pod = self.pods.get(uid, f"{namespace}/{name}")
        if pod is None:
            held = self.held.get(f"{namespace}/{name}")
            if held is not None and not (uid and held.uid and held.uid != uid):
                pod = held
        if pod is None and self.pod_source is not None:
            pod = self.pod_source(namespace, name)
            if pod is not None and uid and pod.uid and pod.uid != uid:
                return None
        return pod

    def want_gpushare(self, args: PodArgs) -> bool:
        if self.gpushare_annotations == "always":
            return True
        return self.gpushare_annotations == "auto" and args.uses_gpushare

    def count(self, what: str) -> None:
        self.counters[what] = self.counters.get(what, 0) + 1

    def observe(self, verb: str, seconds: float, window: int = 1000) -> None:
        ring = self.latency_s.get(verb)
        if ring is None:
            ring = self.latency_s[verb] = deque(maxlen=window)
        ring.append(seconds)

    def latency_summary(self) -> dict[str, dict[str, float]]:
        out = {}
        for verb, ring in list(self.latency_s.items()):
            lat = sorted(ring)
            if lat:
                out[verb] = {"window": len(lat), "p50_ms": 1e3 * lat[len(lat) // 2],
                             "p99_ms": 1e3 * lat[max(0, int(len(lat) * 0.99) - 1)],
                             "max_ms": 1e3 * lat[-1]}
        return out

    # ---- bound pods: one place that keeps cluster, held, uid and journal in step ----------------
    def _hold(self, p: PodArgs) -> None:
        self.held[p.name] = p
        if p.uid:
            self.uid_to_pod[p.uid] = p.name

    def commit_bind(self, pod: PodArgs, node: str, annotations: dict[str, str]) -> None:
        """Commit a reserved allocation whose binder (and journal) succeeded."""
        bound = dataclasses.replace(pod, node_name=node, annotations=dict(annotations))
        with self.lock:
            self.cluster.commit(pod.name)
            self.bound_at[pod.name] = time.time_ns()
            self._hold(bound)
            gone_uid = self._gone.pop(pod.name, None)
            if gone_uid is not None and (not gone_uid or not pod.uid or gone_uid == pod.uid):
                self.release_pod(pod.name)   # deleted while the bind was in flight

    def release_pod(self, name: str, uid: str = "", defer: bool = False) -> bool:
        """Give back a Bound pod's devices (deleted or finished). With a journal the release is
        recorded first. False when the pod holds nothing Bound, or the uid says it is another pod
        of the same name. `defer`: a pod whose bind is in flight is released at its commit."""
        with self.lock:
            a = self.cluster.allocation(name)
            held = self.held.get(name)
            if a is not None and a.state != "Bound" and defer:
                self._gone[name] = uid
                return False
            if a is None or a.state != "Bound" or (uid and held is not None and held.uid
                                                   and held.uid != uid):
                return False
            if self.journal is not None:
                # Under the lock, so the journal's order is the cluster's order for this pod.
                self.journal.record_release(name, uid or (held.uid if held else ""))
            self.cluster.release(name)
            self._forget(name)
            if self.claim_ledger is not None:
                self.claim_ledger.pod_released(a.node)
            return True

    def unreserve(self, name: str) -> None:
        """Undo a reservation whose bind failed (idempotent)."""
        with self.lock:
            self.cluster.unreserve(name)
            self._gone.pop(name, None)

    # ---- retried binds and holds nobody was answered for --------------------------------------
    def held_node(self, pod: PodArgs) -> Optional[str]:
        """The node where this pod (same uid) already holds a Bound allocation: a retried bind
        there is answered from it, so filter must pass that node rather than count the pod's own
        devices against it."""
        with self.lock:
            held = self.held.get(pod.name)
            if held is None or (pod.uid and held.uid and pod.uid != held.uid):
                return None
            a = self.cluster.allocation(pod.name)
        return a.node if a is not None and a.state == "Bound" else None

    def prior_bind(self, key: str, uid: str, node: str) -> "PriorBind":
        """What a bind of `key` to `node` meets (caller holds the lock): no allocation ("new"), the
        same bind answered before ("done"), the same bind journalled but never answered
        ("confirm": record it again, then answer), or in scenario mode a hold on another node,
        dropped here in memory only ("moved": the new bind's record supersedes it; `undo_move`
        puts it back if the new bind fails). Anything else is refused ("error")."""
        prev = self.cluster.allocation(key)
        if prev is None:
            return PriorBind("new")
        held = self.held.get(key)
        if held is not None and uid and held.uid and held.uid != uid:
            return PriorBind("error", error=f"pod {key} on {prev.node} is held for uid "
                                            f"{held.uid}, not {uid}")
        if prev.state == "Bound" and prev.node == node:
            deadline = self.unanswered.pop(key, None) if held is not None else None
            if deadline is not None:
                return PriorBind("confirm", held, deadline=deadline)
            return PriorBind("done")
        if prev.state == "Bound" and self.manual_release and held is not None:
            prior = PriorBind("moved", held, assume_time_ns=prev.assume_time_ns,
                              bound_at=self.bound_at.get(key), deadline=self.unanswered.get(key))
            self.cluster.release(key)
            self._forget(key)
            log.info("pod %s: bind to %s moves its hold from %s", key, node, prev.node)
            return prior
        return PriorBind("error", error=f"pod {key} already holds an allocation on {prev.node} "
                                        f"({prev.state})")

    def undo_move(self, prior: "PriorBind") -> None:
        """Put back the hold a failed moving bind dropped, as it was: its reservation time (the
        core takes it from gpushare's ASSUME_TIME annotation), bind time and retry deadline."""
        held = prior.held
        if prior.action != "moved" or held is None:
            return
        annotations = {**held.annotations, ANN_GPUSHARE_ASSUME_TIME: str(prior.assume_time_ns)}
        try:
            with self.lock:
                self.cluster.restore_allocation(self.make_pod(held), held.node_name, annotations)
                self._hold(held)
                if prior.bound_at is not None:
                    self.bound_at[held.name] = prior.bound_at
                if prior.deadline is not None:
                    self.unanswered[held.name] = prior.deadline
        except (ValueError, KeyError, RuntimeError) as e:
            log.error("pod %s: its hold on %s could not be put back after a failed move (%s); "
                      "the journal still holds it, so a restart restores it",
                      held.name, held.node_name, e)

    def undo_confirm(self, prior: "PriorBind") -> None:
        """A retried bind that could not be confirmed: its hold waits for the next retry until
        the deadline it had."""
        if prior.action == "confirm" and prior.held is not None and prior.deadline is not None:
            with self.lock:
                if self.held.get(prior.held.name) is prior.held:
                    self.unanswered[prior.held.name] = prior.deadline

    def confirm_bind(self, held: PodArgs) -> None:
        """Record a retried bind that was journalled but never answered, so it may be answered
        now (blocking: run it off the event loop)."""
        with self.lock:   # ordered with a concurrent release of the same pod
            if self.held.get(held.name) is not held:
                raise ValueError(f"pod {held.name} was released while its bind was retried")
            assert self.journal is not None
            self.journal.record_bind(held, held.node_name, held.annotations)
        log.info("pod %s: retried bind to %s confirmed", held.name, held.node_name)

    def hold_unanswered(self, pods: Iterable[str]) -> None:
        """Holds of binds journalled but never answered: kept for `hold_timeout_s` for the
        scheduler's retry (same node: confirmed; another node: moved), then released."""
        with self.lock:
            deadline = time.monotonic() + self.hold_timeout_s
            for p in pods:
                if p in self.held:
                    self.unanswered[p] = deadline
            n = len(self.unanswered)
        if n:
            log.warning("%d binds were journalled but never answered (%s); their holds wait %g s "
                        "for the scheduler's retry", n, ", ".join(sorted(self.unanswered)),
                        self.hold_timeout_s)
            timer = threading.Timer(self.hold_timeout_s, self.expire_unanswered)
            timer.daemon = True
            timer.start()

    def expire_unanswered(self) -> list[str]:
        """Release the unanswered holds whose wait is over (journalled first)."""
        released = []
        with self.lock:
            if self.journal is not None and self.journal.closed:
                return released
            now = time.monotonic()
            for p, deadline in list(self.unanswered.items()):
                if deadline > now:
                    continue
                del self.unanswered[p]
                try:
                    if self.release_pod(p):
                        released.append(p)
                except JournalError as e:
                    log.error("pod %s: unanswered hold not released: %s", p, e)
        if released:
            log.warning("released %d holds of binds never answered nor retried within %g s: %s",
                        len(released), self.hold_timeout_s, ", ".join(released))
        return released

    def _forget(self, name: str) -> None:
        self.bound_at.pop(name, None)
        self.unanswered.pop(name, None)
        held = self.held.pop(name, None)
        if held is not None and held.uid and self.uid_to_pod.get(held.uid) == name:
            del self.uid_to_pod[held.uid]

    # ---- restart rebuild -------------------------------------------------------------------
    def restore_bound(self, pods: Iterable[PodArgs]) -> RebuildReport:
        """Replay bound pods' allocation annotations. Pods with none are skipped, pods whose
        annotations the core refuses are refused; both are reported and the rest goes on."""
        report = RebuildReport()
        for p in pods:
            if not p.node_name:
                continue
            if ANN_DEVICE_ALLOCATED not in p.annotations and ANN_GPUSHARE_IDX not in p.annotations:
                report.skipped.append((p.name, "no gpufleet/koordinator/gpushare annotations"))
                continue
            try:
                with self.lock:
                    self._restore(p)
                report.restored.append(p.name)
            except (ValueError, KeyError, RuntimeError) as e:
                if self._restore_before_claims(p):
                    report.restored.append(p.name)
                    continue
                log.warning("restore of %s on %s refused: %s", p.name, p.node_name, e)
                report.refused.append((p.name, str(e)))
        return report

    def _restore(self, p: PodArgs) -> None:
        if not self.cluster.has_node(p.node_name):
            raise ValueError(f"node {p.node_name} unknown to gpufleet")
        self.cluster.restore_allocation(self.make_pod(p), p.node_name, dict(p.annotations))
        self._hold(p)

    def _restore_before_claims(self, p: PodArgs) -> bool:
        """A pod whose annotations name devices claims hold on its node (kube-scheduler's DRA
        plugin gave them out too): restored with the claims' holds set aside, which then take what
        is left; both stay held and the claims are reported (dra.py). False when it is refused
        all the same (the claims are held as before)."""
        with self.lock:
            if self.claim_ledger is None or not any(
                    a.node == p.node_name and holds_a_claim(a.pod)
                    for a in self.cluster.allocations()):
                return False
            restored: list[bool] = []

            def first() -> None:
                try:
                    self._restore(p)
                    restored.append(True)
                except (ValueError, KeyError, RuntimeError):
                    pass

            self.claim_ledger.rehold(p.node_name, first)
        if restored:
            log.warning("pod %s on %s restored from its annotations; devices it names are held "
                        "by claims too", p.name, p.node_name)
        return bool(restored)

    # ---- node changes ------------------------------------------------------------------------
    def replace_node(self, spec: dict[str, Any]) -> list[str]:
        """Add a node, or apply a changed spec to a known one: its bound pods are released and
        restored on the new spec. Returns the pods the new spec no longer holds (refused).
        Raises ValueError (state unchanged) for a bad spec, or while a bind on it is in flight."""
        name = spec["name"]
        with self.lock:
            if not self.cluster.has_node(name):
                self.add_node(spec)
                self._rehold_claims(name)   # a node that comes back: its claims hold it again
                return []
            allocs = [a for a in self.cluster.allocations() if a.node == name]
            if any(a.state != "Bound" for a in allocs):
                raise ValueError(f"node {name}: a bind is in flight; retry the update")
            old_spec = self.node_specs[name]
            pods = [self.held[a.pod] for a in allocs if a.pod in self.held]
            for a in allocs:
                self.cluster.release(a.pod)
            self.cluster.remove_node(name)
            try:
                self.add_node(spec)
            except (ValueError, KeyError):
                self.add_node(old_spec)
                self.restore_bound(pods)
                self._rehold_claims(name)
                raise
            for a in allocs:
                if a.pod not in self.held:
                    self._forget(a.pod)
            report = self.restore_bound(pods)
            for p, _ in report.refused:
                self._forget(p)
            self._rehold_claims(name)   # pods first, then the claims (conflicts reported)
            return [p for p, _ in report.refused]

    def _rehold_claims(self, node: str) -> None:
        if self.claim_ledger is not None:
            self.claim_ledger.rehold(node)

    def remove_node(self, name: str) -> list[str]:
        """Forget a deleted node and the allocations on it (its pods are gone with it)."""
        with self.lock:
            if not self.cluster.has_node(name):
                return []
            allocs = [a for a in self.cluster.allocations() if a.node == name]
            if any(a.state != "Bound" for a in allocs):
                raise ValueError(f"node {name}: a bind is in flight; retry the removal")
            for a in allocs:
                self.cluster.release(a.pod)
                self._forget(a.pod)
            self.cluster.remove_node(name)
            self.node_specs.pop(name, None)
            # Claims' holds go with the node; the claims hold it again if it comes back.
            return [a.pod for a in allocs if not holds_a_claim(a.pod)]

    # ---- /state ----------------------------------------------------------------------------
    def usage(self) -> dict[str, Any]:
        """Per node, per device: capacity and what allocations hold (Reserved and Bound), as the
        core accounts it (one read of its device arrays)."""
        with self.lock:
            allocs = list(self.cluster.allocations())
            u = self.cluster.device_usage(copy=True)
            names = self.cluster.node_names()  # nodes change only under self.lock: the same instant
        pods_on: dict[str, list[str]] = {}
        for a in allocs:
            pods_on.setdefault(a.node, []).append(a.pod)
        nodes: dict[str, Any] = {name: {"devices": [], "pods": sorted(pods_on.get(name, []))}
                                 for name in sorted(names)}
        for i in range(len(u["minor"])):
            nodes[u["node_name"][i]]["devices"].append({
                "type": u["type"][i], "minor": int(u["minor"][i]), "model": u["model"][i],
                "health": bool(u["healthy"][i]),
                "core_total": int(u["core_capacity"][i]), "core_used": int(u["core_used"][i]),
                "memory_total": int(u["memory_capacity"][i]),
                "memory_used": int(u["memory_used"][i])})
        out = {"strategy": self.strategy, "allocations": len(allocs),
               "requests": dict(self.counters), "latency": self.latency_summary(),
               "process_cpu_s": time.process_time(), "rebuild": self.rebuild.summary(),
               "nodes": nodes}
        if self.journal is not None:
            out["journal"] = self.journal.stats()
        if self.claim_ledger is not None:
            out["claim_conflicts"] = dict(self.claim_ledger.conflicts)
        return out


# ---- sources ---------------------------------------------------------------------------------
def _scenario_pod(entry: dict[str, Any], where: str) -> PodArgs:
    """A scenario pod: either a Kubernetes Pod object or the short form of the scenario format
    {name, requests (or containers, init_containers, overhead), node?, annotations?,
    node_selector?, tolerations?, gpu_models?, scope?, priority?} plus the extender's identity fields {namespace?, uid?}; ``name`` may be
    ``namespace/name``. The short form is checked by the scenario reader's rules
    (gpufleet.scenario.read_pod_entry); errors name ``where`` (``file: pods[3]``) and the field."""
    from gpufleet.scenario import ScenarioError, entry_name, read_pod_entry

    if "metadata" in entry or "spec" in entry:
        try:
            return convert.pod_args(entry)
        except ConvertError as e:
            raise ConvertError(f"{where}: {e}") from None
    try:
        name = entry_name(entry, where)
        for key in ("namespace", "uid"):
            if key in entry and not (isinstance(entry[key], str) and entry[key]):
                raise ScenarioError(f"{where} ({name}): {key}: expected a non-empty string")
        ns = entry.get("namespace", "default")
        if "/" in name:
            ns, name = name.split("/", 1)
        fields = {k: v for k, v in entry.items() if k not in ("namespace", "uid")}
        checked = read_pod_entry({**fields, "name": f"{ns}/{name}"}, where)
    except ScenarioError as e:
        raise ConvertError(str(e)) from None
    listed = {k: entry[k] for k in ("containers", "init_containers", "overhead") if k in entry}
    if listed:  # the effective request, as the core computed it for the checked pod
        from gpufleet._core.cluster import effective_requests

        requests = effective_requests(listed, where)
    else:
        requests = {k: str(v) for k, v in (entry.get("requests") or {}).items()}
    return PodArgs(name=checked.pod.name, namespace=ns, pod_name=name, uid=entry.get("uid", ""),
                   requests=requests,
                   node_selector=dict(entry.get("node_selector") or {}),
                   tolerations=list(entry.get("tolerations") or []),
                   gpu_models=list(entry.get("gpu_models") or []),
                   scope=checked.pod.scope, priority=checked.pod.priority,
                   node_name=checked.node, annotations=checked.annotations)


def load_scenario(path: str | Path, journal: str | Path | None = None,
                  accept_journal_loss: bool = False, **state_kwargs: Any) -> ExtenderState:
    """Scenario file (YAML or JSON): `nodes:` node specs or Node objects, `pods:` pods; bound pods
    (with `node`) are restored from their annotations, or placed directly when they have none.
    With `journal` (a path), binds and releases are recorded there and replayed on the next start;
    a journal that lost binds that may have been answered stops the start unless
    `accept_journal_loss`."""
    from gpufleet.scenario import ScenarioError, read_scenario_file

    try:
        data = read_scenario_file(path)  # duplicate keys, NaN, junk, sizes: as every scenario
    except ScenarioError as e:
        raise ConvertError(str(e)) from None
    opened = Journal.open(journal, accept_loss=accept_journal_loss) \
        if journal is not None else None
    try:
        return state_from_scenario(data, journal=opened, where=str(path), **state_kwargs)
    except BaseException:
        if opened is not None:
            opened.close()
        raise


def state_from_scenario(data: dict[str, Any], journal: Optional[Journal] = None,
                        where: str = "scenario", **state_kwargs: Any) -> ExtenderState:
    """State from scenario data, then the journal's binds and releases on top of it. The data is
    checked as the scenario reader checks it (gpufleet.scenario); ConvertError names ``where``
    (the file), the entry and the field."""
    from gpufleet.scenario import ScenarioError, scenario_sections

    try:
        nodes, pods = scenario_sections(data, where)   # queues and jobs are the engine's: unused
    except ScenarioError as e:
        raise ConvertError(str(e)) from None
    pending: dict[str, PodArgs] = {}
    state = ExtenderState(pod_source=lambda ns, n: pending.get(f"{ns}/{n}"), **state_kwargs)
    state.manual_release = True
    replay = journal.replay if journal is not None else None
    # A pod the journal mentions is decided by its last journal event, not by the scenario.
    journalled = set(replay.binds) | set(replay.released) if replay is not None else set()
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise ConvertError(f"{where}: nodes[{i}]: expected a mapping")
        try:
            state.add_node(convert.node_spec(n) if "metadata" in n else n)
        except (ValueError, KeyError) as e:
            raise ConvertError(f"{where}: nodes[{i}] ({n.get('name', '?')}): {e}") from None
    bound = []
    seen: set[str] = set()
    for i, entry in enumerate(pods):
        if not isinstance(entry, dict):
            raise ConvertError(f"{where}: pods[{i}]: expected a mapping")
        p = _scenario_pod(entry, f"{where}: pods[{i}]")
        if p.name in seen:
            raise ConvertError(f"{where}: pods[{i}] ({p.name}): duplicate pod name")
        seen.add(p.name)
        if not p.node_name:
            pending[p.name] = p
        elif p.name in journalled:
            continue
        elif ANN_DEVICE_ALLOCATED in p.annotations or ANN_GPUSHARE_IDX in p.annotations:
            bound.append(p)
        else:
            # A scenario convenience: a bound pod without annotations is placed by gpufleet.
            try:
                with state.lock:
                    a = state.cluster.reserve(state.make_pod(p), p.node_name, state.strategy)
                    state.cluster.commit(p.name)
                    state._hold(dataclasses.replace(p, annotations=a.annotations(
                        gpushare=state.want_gpushare(p))))
            except (ValueError, KeyError) as e:
                raise ConvertError(f"{where}: pods[{i}] ({p.name}): {e}") from None
    report = state.restore_bound(bound)
    if report.skipped or report.refused:
        # The scenario file is input: a bound pod in it that cannot be restored is an error in it.
        raise ConvertError(f"{where}: bound pods could not be restored: " + "; ".join(
            f"{n}: {why}" for n, why in report.skipped + report.refused))
    state.rebuild.merge(report)
    if journal is not None:
        # The journal is the record of what this extender answered: a pod it no longer fits is
        # reported and left out, and the rest still comes back.
        journal_report = state.restore_bound(pod_of(e) for e in replay.binds.values())
        journal_report.log(f"journal {journal.path}")
        state.rebuild.merge(journal_report)
        state.journal = journal
        state.ready_checks["journal"] = journal.check_ready
        state.hold_unanswered(journal.unanswered())
        if state.gangs is not None:
            # The gangs' held plans, less what the binds after them spent (gangs.py).
            state.gangs.journal = journal
            for gang in state.gangs.restore(list(replay.plans.values()), replay.binds.values()):
                journal.record_unplan(gang)
    return state


