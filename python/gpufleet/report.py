"""Plain-text and JSON views of placements and per-device usage (CLI, quickstart, notebooks)."""
from __future__ import annotations

from typing import Any

from gpufleet._core import Cluster, format_bytes
from gpufleet._lazy import lazy
from gpufleet.k8s.keys import RES_GPU_CORE, RES_GPU_MEMORY

np = lazy("numpy")  # imported on first use, so `gpufleet --help` stays fast


def placement_table(results: list[dict[str, Any]]) -> str:
    """One line per pod: node and the Koordinator allocation, or why it was not placed."""
    width = max([len(r["pod"]) for r in results] + [3])
    lines = [f"{'POD':<{width}}  {'NODE':<10}  ALLOCATION / REASON"]
    for r in results:
        detail = _compact(r["device_allocated"]) if r["node"] else r["reason"]
        lines.append(f"{r['pod']:<{width}}  {r['node'] or '-':<10}  {detail}")
    return "\n".join(lines)


def _compact(device_allocated: dict[str, Any] | None) -> str:
    """'gpu0 50% 8Gi, gpu1 ...' from a Koordinator device-allocated dict."""
    if not device_allocated:
        return "(no devices)"
    parts = []
    for dtype, entries in device_allocated.items():
        for e in entries:
            res = e.get("resources", {})
            core = res.get(RES_GPU_CORE, res.get(f"koordinator.sh/{dtype}", "?"))
            mem = res.get(RES_GPU_MEMORY)
            parts.append(f"{dtype}{e['minor']} {core}%" + (f" {mem}" if mem else ""))
    return ", ".join(parts)


def usage_table(cluster: Cluster, text: bool = False) -> Any:
    """Per-GPU usage: node, minor, core used %, memory used / capacity."""
    u = cluster.device_usage()
    names = cluster.node_names()
    rows = []
    for i in np.flatnonzero(u["is_gpu"]):
        rows.append({
            "node": names[u["node"][i]],
            "minor": int(u["minor"][i]),
            "healthy": bool(u["healthy"][i]),
            "core_used": int(u["core_used"][i]),
            "memory_used": int(u["memory_used"][i]),
            "memory_capacity": int(u["memory_capacity"][i]),
        })
    if not text:
        return rows
    lines = [f"{'NODE':<10} {'GPU':>3}  {'CORE':>5}  {'MEMORY':>17}  USAGE"]
    for r in rows:
        frac = r["memory_used"] / r["memory_capacity"] if r["memory_capacity"] else 0.0
        bar = "#" * round(frac * 20)
        mem = f"{format_bytes(r['memory_used'])}/{format_bytes(r['memory_capacity'])}"
        flag = "" if r["healthy"] else "  (unhealthy)"
        lines.append(f"{r['node']:<10} {r['minor']:>3}  {r['core_used']:>4}%  {mem:>17}  "
                     f"[{bar:<20}]{flag}")
    return "\n".join(lines)
