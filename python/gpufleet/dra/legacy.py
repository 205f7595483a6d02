"""One ledger for DRA and the device-plugin vocabularies (whole GPUs, Koordinator,
gpushare/HAMi shares), and the translation of those requests into ResourceClaims.

**How slices map onto a node's devices.** A ResourceSlice device is the Cluster device of the
same node (the slice's ``nodeName``) with the same UUID (a ``uuid`` attribute equal to the
device's ``id``) or, without a UUID, a ``type: gpu`` device with the same minor: its ``minor``
attribute, or for NVIDIA's DRA driver (``gpu.nvidia.com``) the ``gpu-<minor>`` device name it
gives a whole GPU. A GPU the Cluster splits into MIG instances is all of its instances. A MIG
partition (``type: mig``) is the Cluster instance with its UUID or, without one, it is found by
its parent GPU (``parentUUID``, else the minor in NVIDIA's ``gpu-<minor>-mig-...`` device name)
and the memory slots it takes (the ``memory-slice-<i>`` counters it consumes, or the
``memorySlice<i>`` capacities it publishes): the instance of the same profile and first slot,
else, conservatively, every instance it overlaps, or the parent whole where the Cluster does not
split it. Devices that map nowhere belong to DRA alone.

**One accounting.** A committed claim holds its mapped devices in the Cluster too, as a bound
allocation of the pseudo-pod ``dra:<namespace>/<claim>`` that takes each device whole (so no
pod asking through any other vocabulary is given it); a GPU published as shared by capacity
(``cores`` in percent, ``memory`` in bytes, HAMi's names) is held as a Koordinator share of the
cores and memory the claim consumes, by the pseudo-pod ``dra:<namespace>/<claim>@<node>/gpu<minor>``.
Releasing the claim releases them. In the other direction, a DRA device that takes a Cluster
device with usage is in use for DRA questions (unless the counters of that device's exact
counterpart, in use, already refuse it: so a pod's MIG instance takes its partition's counters
from the parent once, and the parent's other partitions stay free), and a GPU shared by capacity has at least the Cluster's core percent and
memory consumed (those include the claims' own shares, so nothing counts twice). The claim's
``status.allocation`` stays the record: a restore re-applies the claims and recreates the
pseudo-pods from it, as the extender rebuilds from the API server.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any, NamedTuple

from gpufleet import _core

from gpufleet.dra.objects import DraError
from gpufleet.k8s.keys import (RES_ALIYUN_GPU_COUNT, RES_ALIYUN_GPU_MEM, RES_GPU, RES_GPU_CORE,
                               RES_GPU_MEMORY, RES_GPU_MEMORY_RATIO, RES_NVIDIA_GPU)

PSEUDO_POD_PREFIX = "dra:"
# The capacities of a GPU shared by capacity that map onto the Cluster's shares (HAMi's names):
# percent of its cores, bytes of its memory.
CORES = "cores"
MEMORY = "memory"
# HAMi's names for a share of one GPU (memory in MiB, percent of the cores).
RES_HAMI_GPU_MEM = "nvidia.com/gpumem"
RES_HAMI_GPU_CORES = "nvidia.com/gpucores"


def pseudo_pod(claim: str) -> str:
    return PSEUDO_POD_PREFIX + claim


class DeviceMap(NamedTuple):
    """How a node's DRA devices map onto its Cluster devices. `grants`: DRA device index -> the
    Cluster devices (type, minor) it takes; `exact`: a Cluster device -> the DRA device that is
    exactly it (a whole GPU, or the MIG partition of the same profile and placement)."""
    grants: dict[int, tuple[tuple[str, int], ...]]
    exact: dict[tuple[str, int], int]
    parents: set[int]  # DRA devices that are a whole GPU the Cluster splits into MIG instances


# What NVIDIA's DRA driver (cmd/gpu-kubelet-plugin) publishes. A partition's memory slots: the
# counters it consumes of its parent's counter set (partitionable devices) and the capacities of
# a MIG device that exists. Of its releases, only v25.3.x published a ``minor`` attribute;
# every version names a whole GPU gpu-<minor> and a partition gpu-<parent minor>-mig-....
NVIDIA_DRIVER = "gpu.nvidia.com"
_SLOT_COUNTER = re.compile(r"^memory-slice-(\d+)$")
_SLOT_CAPACITY = re.compile(r"^memorySlice(\d+)$")
_NVIDIA_GPU_NAME = re.compile(r"^gpu-(\d+)$")
_NVIDIA_MIG_NAME = re.compile(r"^gpu-(\d+)-mig-")


@functools.lru_cache(maxsize=1)
def _memory_slots() -> dict[str, dict[str, int]]:
    """GPU model (and its aliases) -> MIG profile -> the memory slots it takes."""
    out = {}
    for model in _core.mig_geometry():
        for name in (model["model"], *model["aliases"]):
            out[name] = {p["name"]: p["memory_slices"] for p in model["profiles"]}
    return out


def _mig_instances(node_spec: dict[str, Any]) -> dict[int, list[tuple[tuple[str, int], str, int, int, str]]]:
    """GPU minor -> its MIG instances as ((type, minor), profile, first slot, slots, id); an
    instance is a device of type mig-<profile>, or gpu on a node of the single strategy."""
    single = node_spec.get("mig_strategy") == "single"
    out: dict[int, list[tuple[tuple[str, int], str, int, int, str]]] = {}
    for d in node_spec.get("devices") or []:
        if d.get("type", "gpu") != "gpu" or not d.get("mig"):
            continue
        for inst in d["mig"]:
            span = _memory_slots().get(d.get("model"), {}).get(inst["profile"], 1)
            kind = "gpu" if single else f"mig-{inst['profile']}"
            out.setdefault(d["minor"], []).append(
                ((kind, 8 * d["minor"] + inst["start"]), inst["profile"], inst["start"], span,
                 inst.get("id") or ""))
    return out


def _memory_slices(device: dict[str, Any]) -> list[int]:
    """The memory slots a partition takes, read from the ``memory-slice-<i>`` counters it
    consumes and the ``memorySlice<i>`` capacities it publishes."""
    counters = [n for use in device.get("consumesCounters") or [] for n in use.get("counters") or {}]
    found = [_SLOT_COUNTER.match(n) for n in counters]
    found += [_SLOT_CAPACITY.match(n) for n in device.get("capacity") or {}]
    return sorted({int(m.group(1)) for m in found if m})


def _named_minor(driver: str, name: str, pattern: re.Pattern[str]) -> int | None:
    """The GPU minor in the name NVIDIA's driver gives a device (None for other drivers)."""
    m = pattern.match(name) if driver == NVIDIA_DRIVER else None
    return int(m.group(1)) if m else None


def device_map(node_spec: dict[str, Any], devices: list[Any]) -> DeviceMap:
    """Which Cluster devices of the node each DRA device takes (see the module's docstring)."""
    specs = node_spec.get("devices") or []
    migs = _mig_instances(node_spec)
    by_id = {d.get("id"): (d.get("type", "gpu"), d["minor"]) for d in specs if d.get("id")}
    gpus = {d["minor"] for d in specs if d.get("type", "gpu") == "gpu"}
    ids = {d["minor"]: d.get("id") for d in specs if d.get("type", "gpu") == "gpu"}
    instance_ids = {i[4]: (minor, i) for minor, insts in migs.items() for i in insts if i[4]}
    grants: dict[int, tuple[tuple[str, int], ...]] = {}
    exact: dict[tuple[str, int], int] = {}
    parents: set[int] = set()
    for i, ref in enumerate(devices):
        spec = ref.slice["spec"]
        if spec.get("nodeName") != node_spec.get("name") or spec.get("perDeviceNodeSelection"):
            continue
        attrs = ref.device.get("attributes") or {}

        def attr(name: str) -> Any:
            value = attrs.get(name, attrs.get(f"{ref.driver}/{name}"))
            return next(iter(value.values())) if isinstance(value, dict) and value else None

        uuid, kind = attr("uuid"), attr("type")
        if isinstance(uuid, str) and uuid in instance_ids:  # a MIG partition by its UUID
            key = instance_ids[uuid][1][0]
            grants[i], exact[key] = (key,), i
            continue
        if kind == "mig":
            parent_uuid = attr("parentUUID")
            if parent_uuid in by_id:
                parent = by_id[parent_uuid][1]
            else:
                parent = _same_gpu(_named_minor(ref.driver, ref.device["name"], _NVIDIA_MIG_NAME),
                                   parent_uuid, ids)
            found = _partition(parent, attr("profile"), _memory_slices(ref.device), migs, gpus)
            if found is not None:
                grants[i] = found[0]
                if found[1]:
                    exact[found[0][0]] = i
            continue
        if isinstance(uuid, str) and uuid in by_id:
            key = by_id[uuid]
        elif kind == "gpu" and (minor := _same_gpu(
                attr("minor") if type(attr("minor")) is int  # an int attribute, not a bool
                else _named_minor(ref.driver, ref.device["name"], _NVIDIA_GPU_NAME), uuid, ids)) in gpus:
            key = ("gpu", minor)
        else:
            continue
        if key[0] == "gpu" and key[1] in migs:  # a whole GPU in MIG mode is all its instances
            grants[i] = tuple(inst[0] for inst in migs[key[1]])
            parents.add(i)
        else:
            grants[i], exact[key] = (key,), i
    return DeviceMap(grants, exact, parents)


def _same_gpu(minor: int | None, uuid: Any, ids: dict[int, Any]) -> int | None:
    """`minor`, unless the Cluster's GPU there has a UUID other than the device's."""
    if minor is None or (isinstance(uuid, str) and ids.get(minor) and ids[minor] != uuid):
        return None
    return minor


def _partition(parent: Any, profile: Any, slots: list[int], migs: dict[int, list[Any]],
               gpus: set[int]) -> tuple[tuple[tuple[str, int], ...], bool] | None:
    """(the Cluster devices a MIG partition takes, whether it is exactly one instance), or None
    when its parent or its memory slots are not known. On a GPU the Cluster splits, it takes the
    instances whose slots it overlaps; on one the Cluster keeps whole, that GPU."""
    if type(parent) is not int or not slots:  # an int attribute, not a bool
        return None
    if parent not in migs:
        return ((("gpu", parent),), False) if parent in gpus else None
    first, last = slots[0], slots[-1]
    hit = [inst for inst in migs[parent] if inst[2] <= last and first < inst[2] + inst[3]]
    same = len(hit) == 1 and hit[0][1] == profile and hit[0][2] == first
    return (tuple(inst[0] for inst in hit), same) if hit else None


def refused_by_counters(table: Any, i: int, other: int) -> bool:
    """Whether DRA device `i` of a node's table cannot be had beside device `other`: both
    consume a counter that cannot hold their sum."""
    theirs = dict(table.dev_counters[other])
    return any(slot in theirs and amount + theirs[slot] > table.counter_total[slot]
               for slot, amount in table.dev_counters[i])


def hold(cluster: Any, claim: str, node: str, grants: list[tuple[str, int]]) -> None:
    """Binds the claim's mapped devices (whole GPUs, MIG instances) whole to its pseudo-pod;
    DraError (state unchanged) when a pod outside DRA holds one."""
    from gpufleet import Pod
    from gpufleet.k8s.annotations import DeviceGrant, render_device_allocated
    from gpufleet.k8s.keys import KOORD_DEVICE_ALLOCATED
    if not grants or cluster.allocation(pseudo_pod(claim)) is not None:
        return
    grants = sorted(set(grants))
    if any(t != "gpu" and not t.startswith("mig-") for t, _ in grants):
        raise DraError(f"ResourceClaim {claim}: only whole GPUs and MIG instances are held in the "
                       f"Cluster, got {grants}")
    requests: dict[str, int] = {}
    for t, _ in grants:
        resource = RES_NVIDIA_GPU if t == "gpu" else f"nvidia.com/{t}"
        requests[resource] = requests.get(resource, 0) + 1
    doc = json.loads(render_device_allocated([DeviceGrant("gpu", m, 100, None, 100) for t, m in grants if t == "gpu"]))
    migs = [(t, m) for t, m in grants if t != "gpu"]
    memory = _instance_memory(cluster.node(node)) if migs else {}  # reading the node's spec costs
    for t, m in migs:  # a MIG instance is granted whole, with its memory
        doc.setdefault(t, []).append({"minor": m, "resources": {
            f"koordinator.sh/{t}": "100", RES_GPU_MEMORY: str(memory.get((t, m), 0))}})
    pod = Pod.from_dict({"name": pseudo_pod(claim), "requests": requests})
    try:
        cluster.restore_allocation(pod, node, {KOORD_DEVICE_ALLOCATED: json.dumps(doc, separators=(",", ":"))})
    except (ValueError, KeyError) as e:
        raise DraError(f"ResourceClaim {claim}: its devices on {node} are held outside DRA: "
                       f"{e}") from None


def _instance_memory(node_spec: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(f"mig-{inst['profile']}", 8 * d["minor"] + inst["start"]): _core.parse_quantity(str(inst["memory"]))
            for d in node_spec.get("devices") or [] for inst in d.get("mig") or [] if inst.get("memory")}


def share_pod(claim: str, node: str, minor: int) -> str:
    """The pseudo-pod that holds a claim's share of one GPU shared by capacity."""
    return f"{pseudo_pod(claim)}@{node}/gpu{minor}"


def hold_shares(cluster: Any, claim: str, node: str, shares: list[tuple[int, int, int]]) -> list[str]:
    """Binds each (minor, core percent, memory bytes) share a claim consumes of a GPU shared by
    capacity to a pseudo-pod of its own (Koordinator's gpu-core and gpu-memory); returns their
    names. DraError, with none of them held, when a GPU has no room left for its share."""
    from gpufleet import Pod
    from gpufleet.k8s.annotations import DeviceGrant, render_device_allocated
    from gpufleet.k8s.keys import KOORD_DEVICE_ALLOCATED
    names: list[str] = []
    made: list[str] = []  # by this call: the only ones taken back on failure
    try:
        for minor, core, memory in shares:
            name = share_pod(claim, node, minor)
            names.append(name)
            if cluster.allocation(name) is not None:
                continue
            requests = {RES_GPU_MEMORY: str(memory), **({RES_GPU_CORE: str(core)} if core else {})}
            annotation = render_device_allocated([DeviceGrant("gpu", minor, core, memory, None)])
            cluster.restore_allocation(Pod.from_dict({"name": name, "requests": requests}), node,
                                       {KOORD_DEVICE_ALLOCATED: annotation})
            made.append(name)
    except (ValueError, KeyError) as e:
        for name in made:
            cluster.release(name)
        raise DraError(f"ResourceClaim {claim}: its share of a GPU on {node} does not fit beside the "
                       f"pods there: {e.args[0] if e.args else e}") from None
    return names


def device_use(cluster: Any, node: str | None = None) -> dict[str, dict[tuple[str, int], tuple[int, int]]]:
    """Per node (only `node` when given): (type, minor) -> (core percent, memory bytes) of its
    Cluster devices that hold some usage."""
    u = cluster.device_usage(copy=True)
    out: dict[str, dict[tuple[str, int], tuple[int, int]]] = {}
    names = u["node_name"]
    mask = (u["core_used"] > 0) | (u["memory_used"] > 0)  # the devices in use only, read in C
    for i in mask.nonzero()[0].tolist():
        if node is not None and names[i] != node:
            continue
        out.setdefault(names[i], {})[(u["type"][i], int(u["minor"][i]))] = (
            int(u["core_used"][i]), int(u["memory_used"][i]))
    return out


class UseReader:
    """device_use() of one Cluster, read again only where it changed: the Cluster's change feed
    (``Cluster.usage_changes``) names the nodes changed since the last read, and only those are
    read (nothing at all when none changed); a node whose use did not change keeps the very same
    dict (callers may key caches on its identity). The whole usage is read again when the feed
    cannot say: the first read, a node removed, or a reader left too far behind."""

    def __init__(self) -> None:
        self._version = 0  # where the last read stopped in the Cluster's change feed
        self.use: dict[str, dict[tuple[str, int], tuple[int, int]]] = {}
        self.changed: set[str] | None = None  # the nodes the last read changed (None: all)

    def read(self, cluster: Any) -> dict[str, dict[tuple[str, int], tuple[int, int]]]:
        """Per node with some usage: its devices' (type, minor) -> (core percent, memory
        bytes), as device_use(cluster) gives it. The dict is shared: do not change it."""
        # The version is taken before the usage: a change made in between is read now and named
        # by the feed again next time, so none is ever missed.
        version, nodes = cluster.usage_changes(self._version)
        if nodes is None:
            self.use, self.changed = device_use(cluster), None
        else:
            use, changed = self.use, set()
            for node, now in zip(nodes, cluster.node_device_use(nodes) if nodes else ()):
                if now:
                    if now != use.get(node):
                        use[node] = now
                        changed.add(node)
                elif use.pop(node, None) is not None:
                    changed.add(node)
            self.changed = changed
        self._version = version
        return self.use


def drop(cluster: Any, claim: str, shares: tuple[str, ...] | list[str] = ()) -> None:
    """Releases the claim's pseudo-pods (the whole devices', and `shares`)."""
    for name in (pseudo_pod(claim), *shares):
        if cluster.allocation(name) is not None:
            cluster.release(name)


# --- requests of the device-plugin vocabularies as claims -----------------------------------------

# Shares of one GPU: (resource, capacity name, unit). Koordinator's percent of cores and of memory,
# gpushare's and HAMi's memory, HAMi's percent of cores.
SHARE_RESOURCES = {
    RES_GPU_CORE: ("cores", ""),
    RES_GPU_MEMORY_RATIO: ("memoryRatio", ""),
    RES_GPU_MEMORY: ("memory", ""),
    RES_ALIYUN_GPU_MEM: ("memory", "Gi"),
    RES_HAMI_GPU_MEM: ("memory", "Mi"),
    RES_HAMI_GPU_CORES: ("cores", ""),
}
WHOLE_RESOURCES = (RES_NVIDIA_GPU, RES_GPU)


def claim_from_requests(name: str, namespace: str, requests: dict[str, Any],
                        classes: list[dict[str, Any]], shared_class: str | None = None) -> dict[str, Any] | None:
    """The ResourceClaim a pod's extended-resource requests become (as Kubernetes' extended
    resource mapping and HAMi's DRA webhook translate them): whole GPUs go to the DeviceClass whose
    ``extendedResourceName`` is the resource, shares of one GPU to `shared_class` as capacity
    requests (``memory``, ``cores``, ``memoryRatio``). None when the pod asks for no device."""
    by_resource = {(c.get("spec") or {}).get("extendedResourceName"): c["metadata"]["name"] for c in classes}
    reqs: list[dict[str, Any]] = []
    for resource in WHOLE_RESOURCES:
        if resource in requests and resource in by_resource and int(requests[resource]) > 0:
            reqs.append({"name": "gpu", "exactly": {"deviceClassName": by_resource[resource],
                                                    "count": int(requests[resource])}})
    shares = {cap: f"{requests[r]}{unit}" for r, (cap, unit) in SHARE_RESOURCES.items() if r in requests}
    if shares:
        if shared_class is None:
            raise DraError(f"pod {namespace}/{name}: asks for a share of a GPU "
                           f"({', '.join(sorted(shares))}) but no shared device class is given")
        count = int(requests.get(RES_ALIYUN_GPU_COUNT, requests.get(RES_NVIDIA_GPU, 1)) or 1)
        reqs = [{"name": "gpu", "exactly": {"deviceClassName": shared_class, "count": count,
                                            "capacity": {"requests": shares}}}]
    missing = [r for r in WHOLE_RESOURCES if r in requests and r not in by_resource and not shares]
    if missing:
        raise DraError(f"pod {namespace}/{name}: no DeviceClass has extendedResourceName {missing[0]}")
    if not reqs:
        return None
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{name}-gpu", "namespace": namespace},
            "spec": {"devices": {"requests": reqs}}}
