"""Which pod holds each advertised device ID, as far as the plugin can know.

The kubelet never tells a device plugin that a container ended: it simply offers the IDs
again in a later Allocate. So a hold is kept only where the plugin knows the holder, i.e. in
shared mode with a pod source, where Allocate is matched to a pod; the hold lasts while that
pod is live on the node (listed by the pod source's ``live_uids()``, else still listed by the
pod source) and is released when it is not, or by :meth:`release_pod`. An Allocate that names
an ID held by another live pod is a kubelet fault and is refused. Holds live in memory: after
a restart the plugin starts with none (it then refuses less, never more).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True)
class Holder:
    pod_uid: str
    pod_key: str  # namespace/name, for messages


class AllocationLedger:
    """Device ID -> holding pod; thread-safe. Callers serialise check-then-hold themselves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, Holder] = {}

    def conflicts(self, ids: Iterable[str], live: AbstractSet[str], pod_uid: str | None = None
                  ) -> list[tuple[str, Holder]]:
        """IDs held by a live pod other than ``pod_uid``, with their holders."""
        with self._lock:
            return [(i, h) for i in ids if (h := self._held.get(i)) is not None
                    and h.pod_uid in live and h.pod_uid != pod_uid]

    def size(self) -> int:
        """Device IDs held (ended pods are pruned at the next hold)."""
        with self._lock:
            return len(self._held)

    def hold(self, ids: Iterable[str], holder: Holder, live: AbstractSet[str]) -> None:
        """Drops the holds of pods that are no longer live, then records ``holder`` on ``ids``."""
        with self._lock:
            self._held = {i: h for i, h in self._held.items() if h.pod_uid in live}
            self._held.update(dict.fromkeys(ids, holder))

    def release_pod(self, pod_uid: str) -> list[str]:
        """Releases every ID the pod holds; returns them."""
        with self._lock:
            gone = [i for i, h in self._held.items() if h.pod_uid == pod_uid]
            for i in gone:
                del self._held[i]
            return gone

    def held(self) -> dict[str, Holder]:
        with self._lock:
            return dict(self._held)
