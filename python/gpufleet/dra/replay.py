"""A trace run "as DRA": the same pods placed through ResourceClaims on ResourceSlices, beside the
device-plugin vocabularies on a Cluster, to compare the two ways of asking for GPUs.

``compare_as_dra(nodes, pods)`` takes the openb tables (``gpufleet.traces.load_openb_nodes`` /
``load_openb_pods``, or ``synthetic_openb``) and places the pods in table order both ways, GPUs
only (CPU and memory are left out of both, since DRA does not carry them):

- **device plugin**: a Cluster whose nodes have the trace's GPUs; whole-GPU pods ask for whole
  GPUs, shares ask Koordinator's ``gpu-core`` and ``gpu-memory-ratio``;
- **DRA**: every node publishes its GPUs in a ResourceSlice as devices shared by capacity
  (``cores``, 100 per GPU, as HAMi maps gpucores); each pod's requests become a claim through
  ``legacy.claim_from_requests`` (a whole GPU takes all of a device's cores), placed with
  ``DraCluster.place``.

The result has one row per way: pods placed, GPUs allocated (shares summed) and the allocation
ratio over the cluster's GPUs.

``replay_openb_as_dra`` is the openb replay (``gpufleet.replay.replay_openb``, the FGD study's
procedure) with the same slices and claims: see its doc.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpufleet.dra.allocator import STRATEGIES
from gpufleet.dra.cluster import DraCluster
from gpufleet.dra.legacy import RES_HAMI_GPU_CORES, claim_from_requests
from gpufleet.k8s.keys import RES_GPU_CORE, RES_GPU_MEMORY_RATIO, RES_NVIDIA_GPU

DRIVER = "gpu.gpufleet.io"
CLASS = "gpu"
_CLASSES = [{"metadata": {"name": CLASS}, "spec": {"extendedResourceName": RES_NVIDIA_GPU}}]


def _requests(pod: Any) -> dict[str, Any]:
    n, milli = int(pod.num_gpu), int(pod.gpu_milli)
    if n == 0:
        return {}
    if milli >= 1000 or n > 1:
        return {RES_NVIDIA_GPU: n}
    pct = max(1, milli // 10)
    return {RES_GPU_CORE: pct, RES_GPU_MEMORY_RATIO: pct}


def _gpu_cluster() -> DraCluster:
    """A DraCluster with the class every translated claim asks for."""
    dra = DraCluster()
    dra.apply({"kind": "DeviceClass", "metadata": {"name": CLASS},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                        "extendedResourceName": RES_NVIDIA_GPU}})
    return dra


def _publish(dra: DraCluster, node: str, count: int, model: str) -> None:
    """The node, and its GPUs in one ResourceSlice as devices shared by capacity."""
    dra.add_node(node)
    if count:
        dra.apply({"kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"}, "spec": {
            "driver": DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                         "attributes": {"model": {"string": model}},
                         "capacity": {"cores": {"value": "100"}}} for i in range(count)]}})


def _claim(name: str, requests: dict[str, Any], models: list[str] | None = None) -> dict[str, Any]:
    """The claim `requests` become. Shares ask for part of a GPU's cores; whole GPUs leave cores
    out and take all of them. `models` (a pod's allowed GPU models) become a CEL selector."""
    claim = claim_from_requests(name, "trace", {RES_NVIDIA_GPU: requests[RES_NVIDIA_GPU]}
                                if RES_NVIDIA_GPU in requests else
                                {RES_HAMI_GPU_CORES: requests[RES_GPU_CORE]},
                                _CLASSES, shared_class=CLASS)
    if models:
        listed = ", ".join('"' + m.replace("\\", "\\\\").replace('"', '\\"') + '"' for m in models)
        claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
            {"cel": {"expression": f'device.attributes["{DRIVER}"].model in [{listed}]'}}]
    return claim


def compare_as_dra(nodes: pd.DataFrame, pods: pd.DataFrame, strategy: str = "binpack") -> pd.DataFrame:
    """Places `pods` in order on `nodes` through both vocabularies; one row per way."""
    from gpufleet import Cluster, Pod
    gpus = int(nodes["num_gpu"].sum())
    legacy = Cluster()
    dra = _gpu_cluster()
    for node in nodes.itertuples():
        count = int(node.num_gpu)
        legacy.add_node({"name": node.name, "cpu": "100000", "memory": "1Pi", "pods": 100000,
                         "gpus": {"count": count, "model": str(node.model or "gpu"), "memory": "80Gi"}}
                        if count else {"name": node.name, "cpu": "100000", "memory": "1Pi", "pods": 100000})
        _publish(dra, node.name, count, str(node.model or "gpu"))
    rows = {"device plugin": [0, 0.0], "DRA": [0, 0.0]}
    for pod in pods.itertuples():
        requests = _requests(pod)
        if not requests:
            continue
        share = int(pod.num_gpu) if RES_NVIDIA_GPU in requests else int(pod.gpu_milli) / 1000
        alloc, _ = legacy.place(Pod.from_dict({"name": pod.name, "requests": requests}), strategy)
        if alloc is not None:
            rows["device plugin"][0] += 1
            rows["device plugin"][1] += share
        claim = _claim(pod.name, requests)
        dra.apply(claim)
        node, _ = dra.place([f"trace/{claim['metadata']['name']}"], commit=True)
        if node is not None:
            rows["DRA"][0] += 1
            rows["DRA"][1] += share
    return pd.DataFrame([{"way": way, "pods placed": placed, "GPUs allocated": round(used, 3),
                          "allocation ratio": round(used / gpus, 4) if gpus else 0.0}
                         for way, (placed, used) in rows.items()])


# --- the openb replay as DRA --------------------------------------------------------------------
TIES = ("seeded", "name")


class _Fragmentation:
    """The study's fragmentation measure against the typical pods (the native replay's
    ``workload``; cpp/gpufleet/placement/strategies/fragmentation.h): a node's free GPU share
    that a typical pod cannot use, all of it where the pod cannot run there, weighted by the
    pods' frequencies; in core percent (100 = one GPU)."""

    def __init__(self, workload: list[dict[str, Any]]) -> None:
        self.cpu_only = sum(w["weight"] for w in workload if int(w["gpu_count"]) == 0)
        self.tasks = [(int(w["cpu_milli"]), int(w["core"]), int(w["gpu_count"]), float(w["weight"]),
                       set(w.get("models") or ())) for w in workload if int(w["gpu_count"]) > 0]

    def of(self, slots: np.ndarray, cpu_left: int, model: str) -> float:
        free = [f for f in slots.tolist() if f >= 0]  # -1 pads nodes with fewer GPUs
        total = sum(free)
        if total == 0:
            return 0.0
        frag = self.cpu_only * total
        for cpu, core, count, weight, models in self.tasks:
            usable = [f for f in free if f >= core] if not models or model in models else []
            runs = cpu_left >= cpu and len(usable) >= count
            frag += weight * (total - sum(usable) if runs else total)
        return frag


def replay_openb_as_dra(nodes: pd.DataFrame, pods: pd.DataFrame, policy: str = "pack", seed: int = 0,
                        stop_at: float = 1.3, *, coverage: float = 0.95, ties: str = "seeded") -> Any:
    """The openb replay (``gpufleet.replay.replay_openb``) with every GPU pod asking through a
    ResourceClaim; returns a ``ReplayResult`` with the native replay's columns and summary (its
    ``policy`` is ``dra:<policy>``; ``cluster`` is the DraCluster).

    The same arrivals as the native replay for the same ``seed``, ``stop_at`` and ``coverage``
    (the native core draws them, and checks the rows), the same typical pods and fragmentation
    measure. Every node publishes its GPUs in a ResourceSlice (``cores``, 100 per GPU, shared by
    capacity); a GPU pod's requests become a claim (``claim_from_requests``; its ``gpu_spec``
    models a CEL selector), allocated and committed where ``DraCluster.place`` with the DRA
    strategy ``policy`` (``pack`` or ``first``: ``gpufleet.dra.STRATEGIES``) would put it among
    the nodes with room for the pod's CPU and memory, which are counted per node as natively (DRA
    does not carry them); ``_ClaimPlacer`` says how it asks. A CPU-only pod
    has no claim: it takes the first node in tie order with room. ``ties`` orders equally scored
    nodes: ``"seeded"`` a random node order drawn from ``seed`` (by NumPy, so not the native
    replay's own order), ``"name"`` name order.
    """
    from gpufleet.replay import ReplayResult, _spec, _summary, replay_openb
    if policy not in STRATEGIES:
        raise ValueError(f"as_dra: policy {policy!r} is not a DRA strategy; known: {', '.join(STRATEGIES)}")
    if ties not in TIES:
        raise ValueError(f"as_dra: ties must be one of {', '.join(TIES)}, got {ties!r} "
                         "(a fresh random node order per pod would ask every node one by one)")
    # The native replay checks the rows and draws the arrivals (they do not depend on placement).
    native = replay_openb(nodes, pods, policy="bestfit", seed=seed, stop_at=stop_at,
                          coverage=coverage, ties="name")
    arrivals = native.timeseries["pod"].to_numpy()
    names = [str(n) for n in nodes["name"]]
    counts = nodes["num_gpu"].astype(np.int64).to_numpy()
    models = ["" if m is None or (isinstance(m, float) and np.isnan(m)) else str(m) for m in nodes["model"]]
    # rank -> input row: DraCluster gives ties to the earlier node name, so nodes are named by rank.
    order = (np.random.default_rng(seed).permutation(len(names)) if ties == "seeded"
             else np.argsort(np.asarray(names, dtype=object), kind="stable"))
    width = len(str(len(names)))
    dra_name = [f"n{r:0{width}d}" for r in range(len(names))]
    dra = _gpu_cluster()
    cpu_left = nodes["cpu_milli"].astype(np.int64).to_numpy()[order].copy()
    mem_left = nodes["memory_mib"].astype(np.int64).to_numpy()[order].copy()
    model_of = [models[row] for row in order]
    for r, row in enumerate(order):
        _publish(dra, dra_name[r], int(counts[row]), model_of[r])
    placer = _ClaimPlacer(dra, dra_name, [int(counts[row]) for row in order], model_of, policy)
    frag_of = _Fragmentation(native.workload)
    node_frag = [frag_of.of(placer.free[r], int(cpu_left[r]), model_of[r]) for r in range(len(order))]
    cap = float(native.summary["cluster_gpus"] * 100)
    pod_cpu = pods["cpu_milli"].astype(np.int64).to_numpy()
    pod_mem = pods["memory_mib"].astype(np.int64).to_numpy()
    pod_gpus = pods["num_gpu"].astype(np.int64).to_numpy()
    pod_milli = pods["gpu_milli"].astype(np.int64).to_numpy()
    pod_models = [_spec(s) for s in pods["gpu_spec"]]
    n = len(arrivals)
    cols = {c: np.zeros(n) for c in ("arrived", "allocated", "fragmented", "idle", "failed_gpu")}
    placed = np.zeros(n, dtype=bool)
    where = np.full(n, None, dtype=object)
    failed = np.zeros(n, dtype=np.int64)
    arrived = allocated = failed_gpu = 0.0
    lost = 0
    frag, idle = sum(node_frag), cap
    for k, i in enumerate(arrivals):
        need = float(pod_gpus[i] * pod_milli[i] // 10)
        arrived += need
        room = (cpu_left >= pod_cpu[i]) & (mem_left >= pod_mem[i])
        if pod_gpus[i] == 0:
            fits = np.flatnonzero(room)
            r = int(fits[0]) if len(fits) else None
        else:
            r = placer.place(f"a{k}-gpu", int(pod_gpus[i]), int(pod_milli[i]), pod_models[i], room)
        if r is None:
            lost += 1
            failed_gpu += need
        else:
            cpu_left[r] -= pod_cpu[i]
            mem_left[r] -= pod_mem[i]
            allocated += need
            idle -= need
            frag -= node_frag[r]
            node_frag[r] = frag_of.of(placer.free[r], int(cpu_left[r]), model_of[r])
            frag += node_frag[r]
            placed[k] = True
            where[k] = names[order[r]]
        cols["arrived"][k], cols["allocated"][k] = arrived / cap, allocated / cap
        cols["fragmented"][k], cols["idle"][k] = max(0.0, frag) / cap, idle / cap
        cols["failed_gpu"][k] = failed_gpu / cap
        failed[k] = lost
    ts = pd.DataFrame({"pod": arrivals, "name": native.timeseries["name"].to_numpy(), "placed": placed,
                       "node": where, "arrived": cols["arrived"], "allocated": cols["allocated"],
                       "fragmented": cols["fragmented"], "idle": cols["idle"],
                       "frag_ratio": np.divide(cols["fragmented"], cols["idle"],
                                               out=np.zeros(n), where=cols["idle"] > 0),
                       "failed": failed, "failed_gpu": cols["failed_gpu"]})
    summary = _summary(ts, f"dra:{policy}", seed, stop_at, native.summary["cluster_gpus"])
    return ReplayResult(summary=summary, timeseries=ts, workload=native.workload, cluster=dra)


class _ClaimPlacer:
    """Places one arrival's claim through a DraCluster and keeps each GPU's free cores in step.

    Which node: the best DRA answer (``DraCluster.allocate``'s score, then the node order) among
    the nodes with room for the pod's CPU and memory. Nodes of the same GPU model whose GPUs are
    used alike answer a claim alike (as DraCluster.place groups nodes), so each such kind is asked
    once per claim shape and the answer kept until the run ends; the chosen node's own answer is
    committed."""

    def __init__(self, dra: DraCluster, names: list[str], counts: list[int], models: list[str],
                 strategy: str) -> None:
        self.dra, self.names, self.models, self.strategy = dra, names, models, strategy
        width = max(counts, default=0)
        self.free = np.full((len(names), max(width, 1)), -1, dtype=np.int64)
        for r, c in enumerate(counts):
            self.free[r, :c] = 100
        self.kinds: dict[tuple[Any, ...], int] = {}
        self.kind = np.array([self._kind_of(r) for r in range(len(names))], dtype=np.int64)
        self.answers: dict[tuple[Any, ...], tuple[int, ...] | None] = {}
        self.shapes: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.model_ok: dict[tuple[str, ...], np.ndarray] = {}

    def _kind_of(self, r: int) -> int:
        return self.kinds.setdefault((self.models[r], tuple(self.free[r].tolist())), len(self.kinds))

    def place(self, name: str, gpus: int, milli: int, models: list[str], room: np.ndarray) -> int | None:
        """The arrival's claim `name` (`gpus` GPUs of `milli` each) committed on a node with
        `room`; that node's rank, or None when no node takes it."""
        core = 100 if milli >= 1000 or gpus > 1 else max(1, milli // 10)
        fit = room & ((self.free >= core).sum(axis=1) >= gpus)
        if models:
            allowed = self.model_ok.get(tuple(models))
            if allowed is None:
                allowed = self.model_ok[tuple(models)] = np.isin(np.asarray(self.models, dtype=object), models)
            fit &= allowed
        fits = np.flatnonzero(fit)
        if not len(fits):  # what DRA would find: no node has the GPUs and the room
            return None
        shape = (gpus, core, tuple(models))
        claim = self.shapes.get(shape)
        if claim is None:
            requests = {RES_NVIDIA_GPU: gpus} if core == 100 else {RES_GPU_CORE: core}
            claim = self.shapes[shape] = _claim("pod", requests, models)
        self.dra.apply({**claim, "metadata": {"name": name, "namespace": "trace"}})
        key = f"trace/{name}"
        kinds, first = np.unique(self.kind[fits], return_index=True)
        best: tuple[Any, ...] | None = None
        asked = {}  # node rank -> its outcome, for the nodes asked now
        for kind, r in zip(kinds.tolist(), fits[first].tolist()):
            rank = self.answers.get((shape, kind), False)
            if rank is False:
                out = asked[r] = self.dra.allocate([key], self.names[r], self.strategy)
                rank = self.answers[(shape, kind)] = (
                    (out.score.get("roots", 0), out.score.get("opened", 0), out.score.get("leftover", 0))
                    if out.ok else None)
            if rank is not None and (best is None or (rank, r) < best):
                best = (rank, r)
        if best is None:
            return None
        r = best[1]
        out = asked.get(r) or self.dra.allocate([key], self.names[r], self.strategy)
        if not out.ok:
            raise RuntimeError(f"as_dra: claim {key} fits node {self.names[r]} by its kind's answer "
                               f"but not itself: {out.reason}")
        self.dra.commit(key, out.results[0])
        for res in out.results[0]["devices"]["results"]:
            self.free[r, int(res["device"].rsplit("-", 1)[1])] -= int(res["consumedCapacity"]["cores"])
        self.kind[r] = self._kind_of(r)
        return r
