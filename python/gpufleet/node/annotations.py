"""Pod allocation annotations: Koordinator's `device-allocated` JSON and gpushare's ALIYUN_* keys.

Quantities arrive as Kubernetes strings ("8Gi", "50") and are parsed once here into integers
(bytes, percent) by the native core's parser, imported lazily so that this module loads without it.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

# Keys and resource names live in keys.py; re-exported here for the callers that read them here.
from .keys import (GPUFLEET_ASSIGNED, GPUSHARE_ASSIGNED, GPUSHARE_ASSUME_TIME,  # noqa: F401
                   GPUSHARE_CONTAINER, GPUSHARE_DEV, GPUSHARE_IDX, GPUSHARE_POD,
                   KOORD_DEVICE_ALLOCATED, RES_GPU, RES_GPU_CORE, RES_GPU_MEMORY,
                   RES_GPU_MEMORY_RATIO, RES_NVIDIA_GPU)

MIB = 1 << 20
GIB = 1 << 30

QuantityParser = Callable[[str], int]

# --- Kubernetes quantities ---------------------------------------------------------------------
_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}


def parse_quantity(text: str | int) -> int:
    """Parses a Kubernetes quantity ("8Gi", "500m", "1e3", "50") to an integer, rounding up
    like `resource.Quantity.Value()` does. The native core parses it, so every entry point shares
    one grammar and one set of bounds; only a node without the compiled extension uses
    `_parse_quantity_without_core`, which follows the same rules (a test holds the two to one
    table of good and bad inputs)."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"invalid quantity {text!r}: expected a string or an integer")
    try:
        from gpufleet import _core
    except ImportError:
        return _parse_quantity_without_core(str(text))
    return int(_core.parse_quantity(str(text)))


_DIGITS = frozenset("0123456789")
_SUFFIX_EXPONENTS = {"": (0, 0), "n": (-9, 0), "u": (-6, 0), "m": (-3, 0), "k": (3, 0), "M": (6, 0),
                     "G": (9, 0), "T": (12, 0), "P": (15, 0), "E": (18, 0), "Ki": (0, 10),
                     "Mi": (0, 20), "Gi": (0, 30), "Ti": (0, 40), "Pi": (0, 50), "Ei": (0, 60)}
_INT64_MAX = (1 << 63) - 1
_NANO = 10**9


def _parse_quantity_without_core(text: str) -> int:
    """The core's quantity rules (cpp/gpufleet/core/quantity.h) for nodes without the extension."""
    def bad(why: str) -> ValueError:
        return ValueError(f"invalid quantity {text!r}: {why}")

    if not text:
        raise bad("empty")
    if len(text) > 128:
        raise bad("longer than 128 characters")
    if any(c in " \t\n\v\f\r" for c in text):
        raise bad("whitespace is not allowed")
    i, negative = 0, False
    if text[0] in "+-":
        negative, i = text[0] == "-", 1
    start = i
    while i < len(text) and text[i] in _DIGITS:
        i += 1
    digits, fraction = text[start:i], ""
    if i < len(text) and text[i] == ".":
        j = i + 1
        while j < len(text) and text[j] in _DIGITS:
            j += 1
        fraction, i = text[i + 1:j], j
    if not digits and not fraction:
        raise bad("no digits")
    suffix = text[i:]
    if suffix in _SUFFIX_EXPONENTS:
        exp10, exp2 = _SUFFIX_EXPONENTS[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        sign, e = (suffix[1], suffix[2:]) if suffix[1] in "+-" else ("+", suffix[1:])
        if not e or any(c not in _DIGITS for c in e):
            raise bad(f'bad exponent "{suffix}"')
        exp10, exp2 = min(int(e), 100000) * (-1 if sign == "-" else 1), 0
    else:
        raise bad(f'unknown suffix "{suffix}"')
    mantissa = int(digits + fraction or "0")
    exp10 -= len(fraction)
    if mantissa == 0:
        return 0
    if negative:
        raise bad("negative values are not allowed")
    if len(str(mantissa)) - 1 + exp10 >= 19:  # at least 10^19: past int64 in any unit
        raise bad("too large")
    value = Fraction(mantissa << exp2) * Fraction(10) ** exp10
    nanos = math.ceil(value * _NANO)  # Kubernetes keeps quantities to the nano, rounding up
    if nanos > _INT64_MAX * _NANO:
        raise bad("too large")
    return -(-nanos // _NANO)


def format_bytes(n: int) -> str:
    """Renders bytes with the largest binary suffix that divides exactly ("80Gi", "81559Mi")."""
    if n < 0:
        raise ValueError(f"negative memory quantity {n}")
    for suffix, mult in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
        if n and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


# --- Koordinator --------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeviceGrant:
    """One device (or share of one) granted to a pod. None means "not limited / not stated"."""

    type: str
    minor: int
    core_percent: int | None = None
    memory_bytes: int | None = None
    memory_ratio: int | None = None
    id: str | None = None


def _grant_from_entry(dtype: str, entry: Any, parse: QuantityParser, key: str) -> DeviceGrant:
    if not isinstance(entry, Mapping) or "minor" not in entry:
        raise ValueError(f"annotation {key}: {dtype} entry without a minor: {entry!r}")
    minor = entry["minor"]
    if not isinstance(minor, int) or isinstance(minor, bool) or minor < 0:
        raise ValueError(f"annotation {key}: {dtype} minor must be a non-negative integer, got {minor!r}")
    res = entry.get("resources") or {}
    if not isinstance(res, Mapping):
        raise ValueError(f"annotation {key}: {dtype} minor {minor}: resources must be an object")

    def q(name: str) -> int | None:
        if name not in res:
            return None
        try:
            return parse(str(res[name]))
        except ValueError as e:
            raise ValueError(f"annotation {key}: {dtype} minor {minor}: {name}: {e}") from None

    core, ratio = q(RES_GPU_CORE), q(RES_GPU_MEMORY_RATIO)
    # `koordinator.sh/gpu` is core and ratio together; `nvidia.com/gpu: N` reads as 100*N.
    combined = q(RES_GPU)
    if combined is None and (n := q(RES_NVIDIA_GPU)) is not None:
        combined = 100 * n
    if combined is not None:
        core = combined if core is None else core
        ratio = combined if ratio is None else ratio
    dev_id = entry.get("id")
    return DeviceGrant(dtype, minor, core, q(RES_GPU_MEMORY), ratio,
                       str(dev_id) if dev_id not in (None, "") else None)


def parse_device_allocated(text: str, *, quantity_parser: QuantityParser = parse_quantity,
                           key: str = KOORD_DEVICE_ALLOCATED) -> list[DeviceGrant]:
    """Parses Koordinator's `device-allocated` JSON into grants (all device types, sorted by
    type then minor). Raises ValueError naming the annotation key on malformed input."""
    try:
        doc = json.loads(text)
    except (TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"annotation {key}: malformed JSON: {e}") from None
    if not isinstance(doc, Mapping):
        raise ValueError(f"annotation {key}: expected an object of device type -> list")
    grants: list[DeviceGrant] = []
    for dtype, entries in doc.items():
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise ValueError(f"annotation {key}: value for {dtype!r} must be a list")
        grants.extend(_grant_from_entry(str(dtype), e, quantity_parser, key) for e in entries)
    return grants


def render_device_allocated(grants: Iterable[DeviceGrant]) -> str:
    """Inverse of `parse_device_allocated` (compact JSON, quantities as Kubernetes strings)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for g in grants:
        res: dict[str, str] = {}
        if g.core_percent is not None:
            res[RES_GPU_CORE] = str(g.core_percent)
        if g.memory_bytes is not None:
            res[RES_GPU_MEMORY] = format_bytes(g.memory_bytes)
        if g.memory_ratio is not None:
            res[RES_GPU_MEMORY_RATIO] = str(g.memory_ratio)
        entry: dict[str, Any] = {"minor": g.minor, "resources": res}
        if g.id:
            entry["id"] = g.id
        out.setdefault(g.type, []).append(entry)
    return json.dumps(out, separators=(",", ":"))


def gpu_grants(grants: Iterable[DeviceGrant]) -> list[DeviceGrant]:
    return [g for g in grants if g.type == "gpu"]


# --- gpushare -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuShareAllocation:
    """gpushare's view: GPU indices plus memory in cluster-wide units (MiB unless configured).
    `pod_units` is the pod's total request; with several indices it is split evenly."""

    indices: tuple[int, ...]
    pod_units: int
    dev_units: int | None = None
    assigned: bool = False
    assume_time_ns: int | None = None

    def to_grants(self, unit_bytes: int = MIB) -> list[DeviceGrant]:
        if not self.indices:
            raise ValueError(f"annotation {GPUSHARE_IDX}: no GPU index")
        share = self.pod_units // len(self.indices)
        ratio = (math.ceil(100 * share / self.dev_units) if self.dev_units else None)
        return [DeviceGrant("gpu", i, None, share * unit_bytes, ratio) for i in self.indices]


def _int_annotation(annotations: Mapping[str, str], key: str, required: bool) -> int | None:
    raw = annotations.get(key)
    if raw is None or str(raw).strip() == "":
        if required:
            raise ValueError(f"annotation {key}: missing")
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"annotation {key}: expected an integer, got {raw!r}") from None


def parse_gpushare(annotations: Mapping[str, str]) -> GpuShareAllocation | None:
    """Reads gpushare annotations; None when the pod has no `ALIYUN_COM_GPU_MEM_IDX`."""
    raw_idx = annotations.get(GPUSHARE_IDX)
    if raw_idx is None:
        return None
    try:
        indices = tuple(int(p) for p in str(raw_idx).split(",") if p.strip() != "")
    except ValueError:
        raise ValueError(f"annotation {GPUSHARE_IDX}: expected a minor or comma list, got {raw_idx!r}") from None
    if not indices or any(i < 0 for i in indices):
        raise ValueError(f"annotation {GPUSHARE_IDX}: expected a minor or comma list, got {raw_idx!r}")
    pod = _int_annotation(annotations, GPUSHARE_POD, required=True)
    assert pod is not None
    if pod <= 0:
        raise ValueError(f"annotation {GPUSHARE_POD}: must be positive, got {pod}")
    assigned = str(annotations.get(GPUSHARE_ASSIGNED, "false")).strip().lower() == "true"
    return GpuShareAllocation(indices, pod, _int_annotation(annotations, GPUSHARE_DEV, False),
                              assigned, _int_annotation(annotations, GPUSHARE_ASSUME_TIME, False))


def render_gpushare(alloc: GpuShareAllocation) -> dict[str, str]:
    out = {GPUSHARE_IDX: ",".join(str(i) for i in alloc.indices),
           GPUSHARE_POD: str(alloc.pod_units),
           GPUSHARE_ASSIGNED: "true" if alloc.assigned else "false"}
    if alloc.dev_units is not None:
        out[GPUSHARE_DEV] = str(alloc.dev_units)
    if alloc.assume_time_ns is not None:
        out[GPUSHARE_ASSUME_TIME] = str(alloc.assume_time_ns)
    return out


# --- either style --------------------------------------------------------------------------------
@dataclass(frozen=True)
class PodAllocation:
    """What a pod's annotations say it was given: Koordinator grants, or gpushare (with the
    equivalent grants filled in so callers can treat both the same)."""

    grants: tuple[DeviceGrant, ...]
    gpushare: GpuShareAllocation | None = None


def allocation_from_annotations(annotations: Mapping[str, str], *, unit_bytes: int = MIB,
                                quantity_parser: QuantityParser = parse_quantity) -> PodAllocation | None:
    """Koordinator wins when both styles are present (it carries the richer core limit)."""
    if KOORD_DEVICE_ALLOCATED in annotations:
        grants = parse_device_allocated(annotations[KOORD_DEVICE_ALLOCATED],
                                        quantity_parser=quantity_parser)
        return PodAllocation(tuple(grants), parse_gpushare(annotations) if GPUSHARE_IDX in annotations else None)
    share = parse_gpushare(annotations)
    if share is None:
        return None
    return PodAllocation(tuple(share.to_grants(unit_bytes)), share)


def parse_allocation_text(text: str, *, unit_bytes: int = MIB) -> PodAllocation:
    """Parses what a user hands `gpufleet node run --allocation`: a Koordinator `device-allocated`
    document (`{"gpu": [...]}`), or an annotations object holding either style."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"allocation: malformed JSON: {e}") from None
    if isinstance(doc, Mapping) and (KOORD_DEVICE_ALLOCATED in doc or GPUSHARE_IDX in doc):
        ann = {k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)
               for k, v in doc.items()}
        alloc = allocation_from_annotations(ann, unit_bytes=unit_bytes)
        assert alloc is not None
        return alloc
    return PodAllocation(tuple(parse_device_allocated(text)))
