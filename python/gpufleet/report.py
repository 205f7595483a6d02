"""Plain-text and JSON views of placements and per-device usage (CLI, quickstart, notebooks).

Memory is printed with Kubernetes binary suffixes (``16Gi``); GPU core is a percentage of one
card (100 = a whole GPU)."""
from __future__ import annotations

from typing import Any, Sequence

from gpufleet._core import Cluster, Pod, format_bytes
from gpufleet._lazy import lazy
from gpufleet.node.keys import RES_GPU_CORE, RES_GPU_MEMORY

np = lazy("numpy")  # imported on first use, so `gpufleet --help` stays fast


def placement_table(results: list[dict[str, Any]], pods: Sequence[Pod] | None = None) -> str:
    """One line per pod: node and the Koordinator allocation, or why it was not placed.

    ``results`` are dicts with ``pod``, ``node`` (``None`` when not placed), ``device_allocated``
    and ``reason``, as ``gpufleet place --json`` prints them. With ``pods`` (the same pods, same
    order: the wide view) the table also shows what each pod requested: CPU, memory, devices and
    allowed GPU models. ValueError when ``pods`` and ``results`` differ in length."""
    if pods is not None and len(pods) != len(results):
        raise ValueError(f"placement_table: {len(results)} results but {len(pods)} pods")
    width = max([len(r["pod"]) for r in results] + [3])
    extra = ""
    if pods is not None:
        requests = [_request(p) for p in pods]
        widths = [max([len(x[i]) for x in requests] + [len(h)]) for i, h in enumerate(_REQUEST_HEADER)]
        extra = "".join(f"{h:<{w}}  " for h, w in zip(_REQUEST_HEADER, widths))
    lines = [f"{'POD':<{width}}  {'NODE':<10}  {extra}ALLOCATION / REASON"]
    for i, r in enumerate(results):
        detail = _compact(r["device_allocated"]) if r["node"] else r["reason"]
        if pods is not None:
            extra = "".join(f"{x:<{w}}  " for x, w in zip(requests[i], widths))
        lines.append(f"{r['pod']:<{width}}  {r['node'] or '-':<10}  {extra}{detail}")
    return "\n".join(lines)


_REQUEST_HEADER = ("CPU", "MEMORY", "DEVICES REQUESTED", "GPU MODELS")


def _request(pod: Pod) -> tuple[str, str, str, str]:
    """A pod's request as table cells: cores, memory, devices ('2x gpu', 'gpu 50% 8Gi') and the
    allowed GPU models ('-': any)."""
    cpu = f"{pod.cpu_milli / 1000:g}" if pod.cpu_milli else "-"
    memory = format_bytes(pod.memory_bytes) if pod.memory_bytes else "-"
    devices = []
    for d in pod.devices:
        if d.whole:
            devices.append(f"{d.count}x {d.type}")
        else:
            share = f"{d.core}%" + (f" {format_bytes(d.memory_bytes)}" if d.memory_bytes else
                                     f" mem {d.memory_ratio}%" if d.memory_ratio != d.core else "")
            devices.append(f"{d.count}x {d.type} {share}" if d.count > 1 else f"{d.type} {share}")
    return cpu, memory, ", ".join(devices) or "-", ",".join(pod.gpu_models) or "-"


def _compact(device_allocated: dict[str, Any] | None) -> str:
    """'gpu0 50% 8Gi, gpu1 ..., rdma1 100% vf 0000:11:00.1' from a Koordinator device-allocated
    dict (an RDMA entry's virtual functions by PCI address)."""
    if not device_allocated:
        return "(no devices)"
    parts = []
    for dtype, entries in device_allocated.items():
        for e in entries:
            res = e.get("resources", {})
            core = res.get(RES_GPU_CORE, res.get(f"koordinator.sh/{dtype}", "?"))
            mem = res.get(RES_GPU_MEMORY)
            vfs = (e.get("extension") or {}).get("vfs") or []
            parts.append(f"{dtype}{e['minor']} {core}%" + (f" {mem}" if mem else "") +
                         (" vf " + ",".join(v["busID"] for v in vfs) if vfs else ""))
    return ", ".join(parts)


def usage_table(cluster: Cluster, text: bool = False, wide: bool = False) -> Any:
    """Per-GPU usage of ``cluster``: a list of dicts (``node``, ``minor``, ``healthy``,
    ``core_used`` in % of the card, ``memory_used`` and ``memory_capacity`` in bytes), or with
    ``text=True`` a table with a usage bar. ``wide=True`` (text only) adds the card's model, its
    free memory and the pods holding it."""
    u = cluster.device_usage()
    names = u["node_name"]
    rows = []
    for i in np.flatnonzero(u["is_gpu"]):
        rows.append({
            "node": names[i],
            "minor": int(u["minor"][i]),
            "healthy": bool(u["healthy"][i]),
            "core_used": int(u["core_used"][i]),
            "memory_used": int(u["memory_used"][i]),
            "memory_capacity": int(u["memory_capacity"][i]),
        })
    if not text:
        return rows
    models = {(names[i], int(u["minor"][i])): u["model"][i] for i in np.flatnonzero(u["is_gpu"])}
    holders = _holders(cluster) if wide else {}
    lines = [f"{'NODE':<10} {'GPU':>3}  {'CORE':>5}  {'MEMORY':>17}  USAGE" +
             ("                   MODEL       FREE MEMORY  PODS" if wide else "")]
    for r in rows:
        frac = r["memory_used"] / r["memory_capacity"] if r["memory_capacity"] else 0.0
        bar = "#" * round(frac * 20)
        mem = f"{format_bytes(r['memory_used'])}/{format_bytes(r['memory_capacity'])}"
        flag = "" if r["healthy"] else "  (unhealthy)"
        line = f"{r['node']:<10} {r['minor']:>3}  {r['core_used']:>4}%  {mem:>17}  [{bar:<20}]"
        if wide:
            key = (r["node"], r["minor"])
            free = format_bytes(max(r["memory_capacity"] - r["memory_used"], 0))
            line += f"  {models[key] or '-':<10}  {free:>11}  {','.join(holders.get(key, [])) or '-'}"
        lines.append(line + flag)
    return "\n".join(lines)


def _holders(cluster: Cluster) -> dict[tuple[str, int], list[str]]:
    """(node, GPU minor) -> names of the pods holding part of that GPU."""
    out: dict[tuple[str, int], list[str]] = {}
    for a in cluster.allocations():
        for d in a.devices:
            if d.type == "gpu":
                out.setdefault((a.node, int(d.minor)), []).append(a.pod)
    return out
