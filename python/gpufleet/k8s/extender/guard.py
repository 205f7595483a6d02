"""Which pods a bind or a release may touch.

kube-scheduler calls bind only for a pod it has just run through filter, and only for pods of its
own profile. So in a cluster (`--kube`) a bind is refused unless
- the pod is already held by this extender (bound by it, or restored from the annotations it
  wrote): that is a retry, answered from the state as before, whatever came in between; or
- the pod went through filter or prioritize since this extender started (kube-scheduler filters
  again before every new attempt, a restart included), the bind names its uid, and the pod as
  the API server has it now has that uid and `spec.schedulerName` equal to the configured one.

The live read is what makes the check independent of what a caller claims in a filter body. The
release verb (scenario mode) takes a uid: when given it must be the uid the pod was bound with.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from gpufleet._extras import require

require("anyio", "k8s", "the scheduler extender (gpufleet extender)")

import anyio.to_thread

from .state import ExtenderState

log = logging.getLogger("gpufleet.extender")

DEFAULT_SCHEDULER = "default-scheduler"   # what the API server fills in when a pod names none

PodReader = Callable[[str, str], dict[str, Any]]   # (namespace, name) -> the pod's JSON; raises


@dataclass(frozen=True)
class BindGuard:
    """The `--kube` bind checks; `read_pod` reads the pod from the API server."""
    read_pod: PodReader
    scheduler_name: str = DEFAULT_SCHEDULER

    async def refusal(self, st: ExtenderState, ns: str, name: str, uid: str) -> str:
        """Why this bind must not go ahead, or "" when it may."""
        key = f"{ns}/{name}"
        with st.lock:
            if st.cluster.allocation(key) is not None:
                return ""   # ours already: the bind answers the retry from the state
        if not uid:
            return f"pod {key}: PodUID is missing (kube-scheduler always sends it)"
        if st.pods.get(uid, key) is None:
            return (f"pod {key} (uid {uid}) was not sent to filter since this extender "
                    "started; it binds only pods kube-scheduler filtered through it")
        try:
            pod = await anyio.to_thread.run_sync(self.read_pod, ns, name)
        except Exception as e:  # noqa: BLE001 - any API failure refuses; the scheduler retries
            return f"pod {key} could not be read from the API server to check it: {e}"
        live_uid = (pod.get("metadata") or {}).get("uid")
        if live_uid != uid:
            return f"pod {key}: the API server's pod has another uid than PodUID {uid}"
        scheduler = (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER
        if scheduler != self.scheduler_name:
            log.warning("bind of %s refused: its schedulerName is %r, not %r", key, scheduler,
                        self.scheduler_name)
            return (f"pod {key} has schedulerName {scheduler!r}, not {self.scheduler_name!r}: "
                    "it is not this extender's to bind")
        return ""


def release_refusal(st: ExtenderState, key: str, uid: str) -> str:
    """Why a release naming `uid` must not go ahead, or "". Without a uid the release goes by
    name, as deleting a pod by name does; with one it must be the uid the pod was bound with."""
    if not uid:
        return ""
    with st.lock:
        held = st.held.get(key)
    if held is None:
        return ""   # nothing held: the release answers that itself
    if not held.uid:
        return (f"pod {key} was bound without a uid, so PodUID {uid} cannot be checked; "
                "release it by name")
    if held.uid != uid:
        return f"pod {key} holds its devices under another uid than PodUID {uid}"
    return ""
