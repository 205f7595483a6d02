"""Gangs placed by network topology in the extender: kube-scheduler asks about one pod at a time,
so the gang's domain is chosen on the first of its pods that filter sees (the same native gang
placer the engine and `gpufleet.topology.place_gang` use) and held for the pods after it: filter
passes only the nodes of that plan with a pod still to take, prioritize puts them first, and every
bind spends one. A plan is dropped when its last pod is bound, or after `ttl` seconds (pods that
never came), and the next pod of the gang plans again.

In scenario mode the plans are journalled (journal.py: a plan when made, an unplan when its last
slot is spent, and the gang named in each of its pods' binds), and `restore` holds them again
after a restart, with the slots the binds after them spent. With --kube they are not kept: a
restart plans each gang again from the pods still to come.

A pod belongs to a gang through its PodGroup annotation (Volcano and kube-batch spell it
`scheduling.k8s.io/group-name`), and the gang's size is Kueue's `pod-group-total-count`
annotation (1 when absent). Its topology constraint is read from the pod's annotations by the core
(Kueue's `podset-*-topology` keys, KAI's `topology-*-placement` keys).
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from gpufleet.k8s import keys

from .convert import PodArgs
from .journal import Journal, JournalError

log = logging.getLogger("gpufleet.extender")


@dataclass
class _Plan:
    slots: dict[str, int]     # node -> pods of the gang it still takes
    domain: str
    made: float
    bound: set[str] = field(default_factory=set)


class GangDomains:
    """Per gang (namespace/group), the nodes its pods go to, held between their cycles."""

    def __init__(self, topology: Any, fit: str = "best-fit", ttl: float = 600.0,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.topology = topology
        self.fit = fit
        self.ttl = ttl
        self.clock = clock
        self.wall = wall              # the journal's times: a restart resets `clock`
        self.journal: Optional[Journal] = None   # scenario mode: plans are journalled there
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(pod: PodArgs) -> Optional[str]:
        """The pod's gang as namespace/group, or None for a pod outside any gang."""
        group = pod.annotations.get(keys.ANN_POD_GROUP, "")
        return f"{pod.namespace}/{group}" if group else None

    def plan(self, cluster: Any, pod: PodArgs, strategy: str) -> tuple[Optional[_Plan], str]:
        """The gang's held plan, made now when there is none (or it expired); (None, why) when
        no domain takes the gang's remaining pods."""
        key = self.key(pod)
        assert key is not None
        now = self.clock()
        with self._lock:
            p = self._plans.get(key)
            if p is not None and now - p.made <= self.ttl:
                return p, ""
            bound = p.bound if p is not None else set()
        try:
            total = int(pod.annotations.get(keys.ANN_POD_GROUP_TOTAL, "1"))
        except ValueError:
            return None, f"annotation {keys.ANN_POD_GROUP_TOTAL} is not a number"
        count = max(1, total - len(bound))
        group = {"name": "pods", "count": count, "requests": pod.requests,
                 "node_selector": pod.node_selector, "tolerations": pod.tolerations,
                 "gpu_models": pod.gpu_models, "scope": pod.scope,
                 "annotations": pod.annotations}
        from gpufleet import _core  # the node tools import this package without the extension

        r = _core.place_gang(cluster, self.topology,
                             {"name": key, "fit": self.fit, "groups": [group]}, strategy, False)
        if not r["placed"]:
            return None, r["reason"]
        slots: dict[str, int] = {}
        for node, k in r["groups"][0]["nodes"]:
            slots[node] = slots.get(node, 0) + k
        p = _Plan(slots, r["groups"][0]["domain"] or "", now, set(bound))
        with self._lock:
            self._plans[key] = p
        self._record(key, p)
        return p, ""

    def bound(self, pod: PodArgs, node: str) -> None:
        """One pod of the gang was bound on `node`: its slot is spent."""
        key = self.key(pod)
        if key is None:
            return
        with self._lock:
            p = self._plans.get(key)
            if p is None or pod.name in p.bound:
                return
            p.bound.add(pod.name)
            if p.slots.get(node, 0) > 0:
                p.slots[node] -= 1
            if any(p.slots.values()):
                return
            del self._plans[key]
        self._record(key, None)

    def _record(self, key: str, plan: Optional[_Plan]) -> None:
        """Journal a plan made (or, None, one whose slots are all spent). A journal that cannot
        take it leaves the plan held in memory only: after a restart the gang plans again."""
        journal = self.journal
        if journal is None:
            return
        try:
            if plan is None:
                journal.record_unplan(key)
            else:
                made = self.wall() - (self.clock() - plan.made)
                journal.record_plan(key, plan.slots, plan.domain, made, sorted(plan.bound))
        except JournalError as e:
            log.warning("gang %s: its plan was not journalled (%s); it is held until a restart",
                        key, e)

    def restore(self, plans: Iterable[dict[str, Any]], binds: Iterable[dict[str, Any]]) -> list[str]:
        """Hold the journalled `plans` again (journal.plan_event, with their `seq`), each less
        the slots spent by the journalled `binds` of its gang that came after it. Returns the
        gangs whose plans have no slot left (the caller journals them over)."""
        later: dict[str, list[dict[str, Any]]] = {}
        for b in binds:
            if b.get("gang"):
                later.setdefault(b["gang"], []).append(b)
        now, wall = self.clock(), self.wall()
        over = []
        with self._lock:
            for event in plans:
                key = event["gang"]
                age = max(0.0, wall - event["made"])
                p = _Plan(dict(event["slots"]), event["domain"], now - age, set(event["bound"]))
                for b in sorted(later.get(key, []), key=lambda b: b["seq"]):
                    if b["seq"] > event["seq"] and b["pod"] not in p.bound:
                        p.bound.add(b["pod"])
                        node = b["args"]["node_name"]
                        if p.slots.get(node, 0) > 0:
                            p.slots[node] -= 1
                if any(p.slots.values()):
                    self._plans[key] = p
                else:
                    over.append(key)
        return over

    def narrow(self, plan: Optional[_Plan], why: str, passed: list[str],
               failed: dict[str, str]) -> list[str]:
        """Filter's answer for a gang's pod: the passed nodes of the plan with a slot left; the
        others fail with the reason."""
        keep: list[str] = []
        for n in passed:
            if plan is not None and plan.slots.get(n, 0) > 0:
                keep.append(n)
            elif plan is None:
                failed[n] = f"gang: {why}"
            else:
                failed[n] = f"gang: outside its topology domain {plan.domain or '(spread)'}"
        return keep
