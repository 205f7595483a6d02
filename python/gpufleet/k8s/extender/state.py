"""The extender's state: one gpufleet.Cluster plus the caches the protocol needs, and the sources
that fill it (a scenario file, or the Kubernetes API) including the rebuild after a restart.

After a restart the only durable record of which device a pod holds is the pod's own annotations
(written before the Binding was created), so the rebuild replays them with
Cluster.restore_allocation: a device handed out before the restart is never handed out again.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from . import convert, quantity
from .binder import Binder, MemoryBinder
from .convert import ConvertError, PodArgs

log = logging.getLogger("gpufleet.extender")

ANN_DEVICE_ALLOCATED = "scheduling.koordinator.sh/device-allocated"
ANN_GPUSHARE_IDX = "ALIYUN_COM_GPU_MEM_IDX"
ANN_GPUSHARE_ASSIGNED = "ALIYUN_COM_GPU_MEM_ASSIGNED"


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
class RebuildReport:
    restored: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (pod, why)


class ExtenderState:
    """Everything a request handler touches. Cluster calls are serialised by `lock`."""

    def __init__(self, cluster: Any = None, *, api: Any = None, strategy: str = "binpack",
                 binder: Optional[Binder] = None, pod_source: Optional[PodSource] = None,
                 gpushare_annotations: str = "auto", pod_cache_size: int = 20000) -> None:
        self.api = api if api is not None else _gpufleet_api()
        self.cluster = cluster if cluster is not None else self.api.Cluster()
        if strategy.split("(")[0] not in self.api.strategies():
            raise ValueError(f"strategy {strategy!r} is not one of "
                             f"{', '.join(self.api.strategies())}")
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
        self.counters: dict[str, int] = {}
        # Handler time (body read, JSON, work, response built) of the latest requests, per verb.
        self.latency_s: dict[str, deque[float]] = {}

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
        pod = self.pods.get(uid, f"{namespace}/{name}")
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

    # ---- restart rebuild -------------------------------------------------------------------
    def restore_bound(self, pods: Iterable[PodArgs]) -> RebuildReport:
        """Replay bound pods' allocation annotations. Pods with none are skipped (reported)."""
        report = RebuildReport()
        for p in pods:
            if not p.node_name:
                continue
            if ANN_DEVICE_ALLOCATED not in p.annotations and ANN_GPUSHARE_IDX not in p.annotations:
                report.skipped.append((p.name, "no gpufleet/koordinator/gpushare annotations"))
                continue
            try:
                with self.lock:
                    if not self.cluster.has_node(p.node_name):
                        raise ValueError(f"node {p.node_name} unknown to gpufleet")
                    self.cluster.restore_allocation(self.make_pod(p), p.node_name,
                                                    dict(p.annotations))
                    if p.uid:
                        self.uid_to_pod[p.uid] = p.name
                report.restored.append(p.name)
            except (ValueError, KeyError, RuntimeError) as e:
                log.warning("restore of %s on %s skipped: %s", p.name, p.node_name, e)
                report.skipped.append((p.name, str(e)))
        return report

    # ---- /state ----------------------------------------------------------------------------
    def usage(self) -> dict[str, Any]:
        """Per node, per device: capacity and what allocations hold (Reserved and Bound)."""
        with self.lock:
            allocs = list(self.cluster.allocations())
            specs = dict(self.node_specs)
        used: dict[tuple[str, str, int], list[int]] = {}
        pods_on: dict[str, list[str]] = {}
        for a in allocs:
            pods_on.setdefault(a.node, []).append(a.pod)
            for g in a.devices:
                u = used.setdefault((a.node, g.type, g.minor), [0, 0])
                u[0] += g.core
                u[1] += g.memory_bytes
        nodes = {}
        for name, spec in sorted(specs.items()):
            devs = []
            for d in spec.get("devices", []):
                res = d.get("resources", {})
                try:
                    mem = quantity.to_int(res.get(convert.KOORD_MEMORY, "0"))
                except ValueError:
                    mem = 0
                dtype, minor = d.get("type", "gpu"), int(d.get("minor", 0))
                core_used, mem_used = used.get((name, dtype, minor), (0, 0))
                devs.append({"type": dtype, "minor": minor, "model": d.get("model", ""),
                             "health": bool(d.get("health", True)),
                             "core_total": 100, "core_used": core_used,
                             "memory_total": mem, "memory_used": mem_used})
            nodes[name] = {"devices": devs, "pods": sorted(pods_on.get(name, []))}
        return {"strategy": self.strategy, "allocations": len(allocs),
                "requests": dict(self.counters), "latency": self.latency_summary(),
                "process_cpu_s": time.process_time(),
                "nodes": nodes}


# ---- sources ---------------------------------------------------------------------------------
def _scenario_pod(entry: dict[str, Any], i: int) -> PodArgs:
    """A scenario pod: either a Kubernetes Pod object or the short form
    {name, namespace?, uid?, requests, node?, annotations?, node_selector?, tolerations?, scope?}."""
    if "metadata" in entry or "spec" in entry:
        return convert.pod_args(entry)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConvertError(f"pods[{i}].name: missing")
    ns = entry.get("namespace", "default")
    if "/" in name:
        ns, name = name.split("/", 1)
    requests = entry.get("requests") or {}
    if not isinstance(requests, dict):
        raise ConvertError(f"pods[{i}] ({name}).requests: expected a map")
    ann = entry.get("annotations") or {}
    if not isinstance(ann, dict):
        raise ConvertError(f"pods[{i}] ({name}).annotations: expected a map")
    return PodArgs(name=f"{ns}/{name}", namespace=ns, pod_name=name, uid=str(entry.get("uid", "")),
                   requests={k: str(v) for k, v in requests.items()},
                   node_selector=dict(entry.get("node_selector") or {}),
                   tolerations=list(entry.get("tolerations") or []),
                   gpu_models=list(entry.get("gpu_models") or []),
                   scope=str(entry.get("scope", "none")), priority=int(entry.get("priority", 0)),
                   node_name=str(entry.get("node") or ""),
                   annotations={str(k): v if isinstance(v, str) else json.dumps(v)
                                for k, v in ann.items()})


def _msg(e: Exception) -> str:
    # KeyError quotes its message; show the core's text as it is.
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)


def load_scenario(path: str | Path, **state_kwargs: Any) -> ExtenderState:
    """Scenario file (YAML or JSON): `nodes:` node specs or Node objects, `pods:` pods; bound pods
    (with `node`) are restored from their annotations, or placed directly when they have none."""
    import yaml

    data = yaml.safe_load(Path(path).read_text())
    return state_from_scenario(data or {}, **state_kwargs)


def state_from_scenario(data: dict[str, Any], **state_kwargs: Any) -> ExtenderState:
    if not isinstance(data, dict):
        raise ConvertError("scenario: expected a map with nodes: and pods:")
    pending: dict[str, PodArgs] = {}
    state = ExtenderState(pod_source=lambda ns, n: pending.get(f"{ns}/{n}"), **state_kwargs)
    for i, n in enumerate(data.get("nodes") or []):
        if not isinstance(n, dict):
            raise ConvertError(f"scenario nodes[{i}]: expected a map")
        try:
            state.add_node(convert.node_spec(n) if "metadata" in n else n)
        except (ValueError, KeyError) as e:
            raise ConvertError(f"scenario nodes[{i}] ({n.get('name', '?')}): {_msg(e)}") from None
    bound = []
    for i, entry in enumerate(data.get("pods") or []):
        if not isinstance(entry, dict):
            raise ConvertError(f"scenario pods[{i}]: expected a map")
        p = _scenario_pod(entry, i)
        if not p.node_name:
            pending[p.name] = p
        elif ANN_DEVICE_ALLOCATED in p.annotations or ANN_GPUSHARE_IDX in p.annotations:
            bound.append(p)
        else:
            # A scenario convenience: a bound pod without annotations is placed by gpufleet.
            try:
                with state.lock:
                    state.cluster.reserve(state.make_pod(p), p.node_name, state.strategy)
                    state.cluster.commit(p.name)
            except (ValueError, KeyError) as e:
                raise ConvertError(f"scenario pods[{i}] ({p.name}): {_msg(e)}") from None
    report = state.restore_bound(bound)
    if report.skipped:
        raise ConvertError("scenario: bound pods could not be restored: " +
                           "; ".join(f"{n}: {why}" for n, why in report.skipped))
    return state


def kube_client() -> Any:
    """CoreV1Api of the official client: in-cluster config, else the local kubeconfig."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.CoreV1Api()


def load_kube(core_v1: Any = None, **state_kwargs: Any) -> tuple[ExtenderState, RebuildReport]:
    """State from the Kubernetes API: every node, then every bound, unfinished pod's annotations.
    Uses the official client (imported lazily) unless a CoreV1Api-like object is given."""
    from .binder import KubeBinder

    if core_v1 is None:
        core_v1 = kube_client()

    def raw(resp: Any) -> Any:
        return json.loads(resp.data)

    def pod_source(ns: str, name: str) -> Optional[PodArgs]:
        try:
            return convert.pod_args(raw(core_v1.read_namespaced_pod(name, ns,
                                                                     _preload_content=False)))
        except Exception as e:  # noqa: BLE001 - any API failure means "not found" to bind
            log.warning("pod %s/%s could not be read: %s", ns, name, e)
            return None

    state_kwargs.setdefault("binder", KubeBinder(core_v1))
    state = ExtenderState(pod_source=pod_source, **state_kwargs)
    for n in raw(core_v1.list_node(_preload_content=False)).get("items", []):
        try:
            state.add_node(convert.node_spec(n))
        except (ConvertError, ValueError) as e:
            log.warning("node skipped: %s", e)
    pods = raw(core_v1.list_pod_for_all_namespaces(
        field_selector="spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
        _preload_content=False)).get("items", [])
    bound = []
    for p in pods:
        try:
            bound.append(convert.pod_args(p))
        except ConvertError as e:
            log.warning("pod skipped: %s", e)
    report = state.restore_bound(bound)
    log.info("rebuilt %d allocations, skipped %d pods", len(report.restored), len(report.skipped))
    return state, report


# ---- keeping a long-running kube-mode state honest -------------------------------------------
def reconcile(state: ExtenderState, live: Iterable[PodArgs], listed_at_ns: int,
              grace_ns: int = 60_000_000_000) -> dict[str, list[str]]:
    """Release Bound allocations whose pod is gone (deleted, finished) and restore annotated bound
    pods gpufleet does not know. `listed_at_ns` is when the pod list was requested: pods this
    process bound within `grace_ns` before it are kept, since the list may predate their Binding."""
    live = [p for p in live if p.node_name]
    names = {p.name for p in live}
    released = []
    with state.lock:
        for a in list(state.cluster.allocations()):
            if a.state == "Bound" and a.pod not in names and \
                    state.bound_at.get(a.pod, 0) < listed_at_ns - grace_ns:
                state.cluster.release(a.pod)
                state.bound_at.pop(a.pod, None)
                released.append(a.pod)
        for uid, pod in list(state.uid_to_pod.items()):
            if state.cluster.allocation(pod) is None:
                del state.uid_to_pod[uid]
        unknown = [p for p in live if state.cluster.allocation(p.name) is None]
    report = state.restore_bound(unknown)
    return {"released": released, "restored": report.restored}


class KubeReconciler:
    """Every `interval_s`, list bound pods and nodes and reconcile (new nodes are added)."""

    def __init__(self, state: ExtenderState, core_v1: Any, interval_s: float = 30.0) -> None:
        self.state, self.api, self.interval_s = state, core_v1, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpufleet-reconcile", daemon=True)

    def start(self) -> "KubeReconciler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 5)

    def once(self) -> dict[str, list[str]]:
        for n in json.loads(self.api.list_node(_preload_content=False).data).get("items", []):
            name = (n.get("metadata") or {}).get("name")
            if name and name not in self.state.node_specs:
                try:
                    self.state.add_node(convert.node_spec(n))
                except (ConvertError, ValueError) as e:
                    log.warning("node skipped: %s", e)
        t = time.time_ns()
        items = json.loads(self.api.list_pod_for_all_namespaces(
            field_selector="spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
            _preload_content=False).data).get("items", [])
        live = []
        for p in items:
            try:
                live.append(convert.pod_args(p))
            except ConvertError as e:
                log.warning("pod skipped: %s", e)
        return reconcile(self.state, live, t)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                out = self.once()
                if out["released"] or out["restored"]:
                    log.info("reconcile: released %s, restored %s", out["released"],
                             out["restored"])
            except Exception:  # noqa: BLE001 - keep reconciling after an API hiccup
                log.exception("reconcile failed")
