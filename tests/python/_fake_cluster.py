"""A small pure-Python stand-in for gpufleet.Cluster / gpufleet.Pod (the native core's contract),
used by the extender tests only when the native extension is not built. It models what the
extender relies on: per-device core/memory accounting, filter reasons, scores, reserve/commit,
annotations, restore_allocation and snapshots. It is not a scheduler.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

try:  # run from a checkout without an installed package: use the tree's python/ folder
    import gpufleet  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from gpufleet.k8s.extender.quantity import parse, to_int

_MIB = 1 << 20
_ANN = "scheduling.koordinator.sh/device-allocated"


class Pod:
    def __init__(self, name: str, requests: dict[str, str], node_selector: Optional[dict] = None,
                 tolerations: Optional[list] = None, gpu_models: Optional[list] = None,
                 scope: str = "none", priority: int = 0) -> None:
        self.name, self.node_selector = name, dict(node_selector or {})
        self.tolerations, self.gpu_models = list(tolerations or []), list(gpu_models or [])
        self.scope, self.priority = scope, priority
        r = dict(requests)
        self.requests = r
        self.cpu_milli = int(parse(r.get("cpu", "0")) * 1000)
        self.memory_bytes = to_int(r.get("memory", "0"))
        self.count, self.core, self.mem, self.ratio = 0, 0, 0, 0
        if "nvidia.com/gpu" in r:
            self.count, self.core, self.ratio = int(parse(r["nvidia.com/gpu"])), 100, 100
        elif "aliyun.com/gpu-mem" in r:
            self.count, self.mem = 1, to_int(r["aliyun.com/gpu-mem"]) * _MIB
        elif "koordinator.sh/gpu" in r:
            p = int(parse(r["koordinator.sh/gpu"]))
            self.count, self.core = (p // 100, 100) if p > 100 else (1, p)
            self.ratio = self.core
        else:
            core = int(parse(r.get("koordinator.sh/gpu-core", "0")))
            mem = to_int(r.get("koordinator.sh/gpu-memory", "0"))
            ratio = int(parse(r.get("koordinator.sh/gpu-memory-ratio", "0")))
            if core and not mem and not ratio:
                raise ValueError("gpu-core alone is invalid: request gpu-memory or "
                                 "gpu-memory-ratio with it")
            if core or mem or ratio:
                n = max(1, core // 100 if core > 100 else 1, ratio // 100 if ratio > 100 else 1)
                self.count, self.core = n, min(core, 100)
                self.mem, self.ratio = mem // n, min(ratio, 100)

    def whole(self) -> bool:
        return self.core >= 100 and self.ratio >= 100


@dataclass
class FitResult:
    code: str = "Ok"
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.code == "Ok"


@dataclass
class DeviceGrant:
    type: str
    minor: int
    core: int
    memory_bytes: int


@dataclass
class Allocation:
    pod: str
    node: str
    cpu_milli: int
    memory_bytes: int
    devices: list[DeviceGrant]
    state: str = "Reserved"
    assume_time_ns: int = 0
    dev_mem: int = 0   # memory of one device on the node, for gpushare's annotation
    gpushare_mem: int = 0

    def annotations(self, gpushare: bool = False) -> dict[str, str]:
        gpus = [{"minor": g.minor, "resources": {
            "koordinator.sh/gpu-core": str(g.core),
            "koordinator.sh/gpu-memory": str(g.memory_bytes)}} for g in self.devices]
        out = {_ANN: json.dumps({"gpu": gpus}, separators=(",", ":"))}
        if gpushare and self.devices:
            out.update({
                "ALIYUN_COM_GPU_MEM_IDX": str(self.devices[0].minor),
                "ALIYUN_COM_GPU_MEM_POD": str(self.devices[0].memory_bytes // _MIB),
                "ALIYUN_COM_GPU_MEM_DEV": str(self.dev_mem // _MIB),
                "ALIYUN_COM_GPU_MEM_ASSIGNED": "false",
                "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(self.assume_time_ns)})
        return out


@dataclass
class _Node:
    spec: dict[str, Any]
    cpu: int = 0
    memory: int = 0
    devices: dict[int, int] = field(default_factory=dict)   # minor -> memory bytes


class Cluster:
    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._allocs: dict[str, Allocation] = {}

    # ---- nodes -------------------------------------------------------------------------------
    def add_node(self, spec: dict[str, Any]) -> None:
        if spec["name"] in self._nodes:
            raise ValueError(f"node {spec['name']}: already exists")
        n = _Node(spec=json.loads(json.dumps(spec)), cpu=int(parse(spec.get("cpu", "0")) * 1000),
                  memory=to_int(spec.get("memory", "0")))
        for d in spec.get("devices", []):
            if d.get("type", "gpu") == "gpu" and d.get("health", True):
                mem = to_int(d["resources"]["koordinator.sh/gpu-memory"])
                if mem <= 0:
                    raise ValueError(f"node {spec['name']}: gpu {d['minor']}: memory must be "
                                     "given and positive")
                n.devices[int(d["minor"])] = mem
        self._nodes[spec["name"]] = n

    def remove_node(self, name: str) -> None:
        del self._nodes[name]

    def node_names(self) -> list[str]:
        return sorted(self._nodes)

    def has_node(self, name: str) -> bool:
        return name in self._nodes

    # ---- accounting --------------------------------------------------------------------------
    def _used(self, node: str) -> tuple[int, int, dict[int, list[int]]]:
        cpu = mem = 0
        dev = {m: [0, 0] for m in self._nodes[node].devices}
        for a in self._allocs.values():
            if a.node == node:
                cpu += a.cpu_milli
                mem += a.memory_bytes
                for g in a.devices:
                    dev[g.minor][0] += g.core
                    dev[g.minor][1] += g.memory_bytes
        return cpu, mem, dev

    def _need_mem(self, pod: Pod, cap: int) -> int:
        return pod.mem if pod.mem else cap * pod.ratio // 100

    def _candidates(self, pod: Pod, node: str) -> tuple[FitResult, list[int]]:
        n = self._nodes[node]
        for k, v in pod.node_selector.items():
            if n.spec.get("labels", {}).get(k) != v:
                return FitResult("UnschedulableAndUnresolvable",
                                 "node(s) didn't match Pod's node affinity/selector"), []
        for t in n.spec.get("taints", []):
            if t.get("effect") in ("NoSchedule", "NoExecute") and not any(
                    tol.get("key") == t["key"] or tol.get("operator") == "Exists" and
                    not tol.get("key") for tol in pod.tolerations):
                return FitResult("UnschedulableAndUnresolvable",
                                 f"node(s) had untolerated taint {{{t['key']}}}"), []
        cpu, mem, dev = self._used(node)
        if cpu + pod.cpu_milli > n.cpu or mem + pod.memory_bytes > n.memory:
            return FitResult("Unschedulable", "Insufficient cpu or memory"), []
        if pod.count == 0:
            return FitResult(), []
        if pod.count > len(n.devices):
            return FitResult("UnschedulableAndUnresolvable", "node(s) have too few GPUs"), []
        fit = []
        for m, cap in n.devices.items():
            core_used, mem_used = dev[m]
            if pod.whole() and (core_used or mem_used):
                continue
            if core_used + pod.core <= 100 and mem_used + self._need_mem(pod, cap) <= cap:
                fit.append(m)
        if len(fit) >= pod.count:
            return FitResult(), fit
        free = sum(cap - dev[m][1] for m, cap in n.devices.items())
        if pod.mem and free >= pod.mem * pod.count:
            return FitResult("Unschedulable", "Insufficient GPU memory in one device"), []
        return FitResult("Unschedulable", "Insufficient GPU"), []

    def filter(self, pod: Pod, node: str) -> FitResult:
        if node not in self._nodes:
            raise KeyError(node)
        return self._candidates(pod, node)[0]

    def _util(self, node: str, extra: int = 0) -> float:
        n = self._nodes[node]
        total = sum(n.devices.values())
        if not total:
            return 0.0
        return min(1.0, (sum(u[1] for u in self._used(node)[2].values()) + extra) / total)

    def score(self, pod: Pod, node: str, strategy: str = "binpack") -> float:
        if node not in self._nodes:
            raise KeyError(node)
        fit, cand = self._candidates(pod, node)
        if not fit.ok:
            return 0.0
        cap = max(self._nodes[node].devices.values(), default=0)
        u = self._util(node, self._need_mem(pod, cap) * pod.count)
        return 100.0 * (u if strategy == "binpack" else 1.0 - u)

    def reserve(self, pod: Pod, node: str, strategy: str = "binpack") -> Allocation:
        if node not in self._nodes:
            raise KeyError(node)
        if pod.name in self._allocs:
            raise ValueError(f"pod {pod.name} already has an allocation")
        fit, cand = self._candidates(pod, node)
        if not fit.ok:
            raise ValueError(fit.reason)
        dev = self._used(node)[2]
        caps = self._nodes[node].devices
        cand.sort(key=lambda m: (caps[m] - dev[m][1]) * (1 if strategy == "binpack" else -1))
        grants = [DeviceGrant("gpu", m, pod.core, self._need_mem(pod, caps[m]))
                  for m in cand[:pod.count]]
        a = Allocation(pod.name, node, pod.cpu_milli, pod.memory_bytes, grants,
                       assume_time_ns=time.time_ns(), dev_mem=max(caps.values(), default=0))
        self._allocs[pod.name] = a
        return a

    def unreserve(self, pod_name: str) -> None:
        a = self._allocs.get(pod_name)
        if a is not None and a.state == "Reserved":
            del self._allocs[pod_name]

    def commit(self, pod_name: str) -> None:
        self._allocs[pod_name].state = "Bound"

    def release(self, pod_name: str) -> None:
        del self._allocs[pod_name]

    def allocation(self, pod_name: str) -> Optional[Allocation]:
        return self._allocs.get(pod_name)

    def allocations(self) -> list[Allocation]:
        return list(self._allocs.values())

    def restore_allocation(self, pod: Pod, node: str, annotations: dict[str, str]) -> Allocation:
        if node not in self._nodes:
            raise KeyError(node)
        caps = self._nodes[node].devices
        grants = []
        if _ANN in annotations:
            for g in json.loads(annotations[_ANN]).get("gpu", []):
                res = g.get("resources", {})
                grants.append(DeviceGrant("gpu", int(g["minor"]),
                                          int(parse(res.get("koordinator.sh/gpu-core", "0"))),
                                          to_int(res.get("koordinator.sh/gpu-memory", "0"))))
        elif "ALIYUN_COM_GPU_MEM_IDX" in annotations:
            grants.append(DeviceGrant("gpu", int(annotations["ALIYUN_COM_GPU_MEM_IDX"]), 0,
                                      int(annotations["ALIYUN_COM_GPU_MEM_POD"]) * _MIB))
        dev = self._used(node)[2]
        for g in grants:
            if g.minor not in caps or dev[g.minor][0] + g.core > 100 or \
                    dev[g.minor][1] + g.memory_bytes > caps[g.minor]:
                raise ValueError(f"gpu {g.minor} on {node} cannot hold {pod.name}")
        a = Allocation(pod.name, node, pod.cpu_milli, pod.memory_bytes, grants, state="Bound",
                       dev_mem=max(caps.values(), default=0))
        self._allocs[pod.name] = a
        return a

    def check_invariants(self) -> None:
        for name, n in self._nodes.items():
            for m, (core, mem) in self._used(name)[2].items():
                if core > 100 or mem > n.devices[m]:
                    raise RuntimeError(f"{name} gpu {m} over-committed")

    def snapshot(self) -> str:
        return json.dumps({"nodes": [n.spec for n in self._nodes.values()],
                           "allocs": [{**a.__dict__, "devices": [g.__dict__ for g in a.devices]}
                                      for a in self._allocs.values()]}, sort_keys=True)

    @staticmethod
    def restore(text: str) -> "Cluster":
        data = json.loads(text)
        c = Cluster()
        for spec in data["nodes"]:
            c.add_node(spec)
        for a in data["allocs"]:
            a = dict(a)
            a["devices"] = [DeviceGrant(**g) for g in a["devices"]]
            c._allocs[a["pod"]] = Allocation(**a)
        return c


def strategies() -> list[str]:
    return ["binpack", "spread"]


def api() -> Any:
    """The real gpufleet module when its native core is built, else this fake."""
    import gpufleet

    if hasattr(gpufleet, "Cluster") and hasattr(gpufleet, "Pod"):
        return gpufleet
    return sys.modules[__name__]
