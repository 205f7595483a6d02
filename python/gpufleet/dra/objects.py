"""Kubernetes' DRA objects (``resource.k8s.io/v1``) read strictly from the dicts YAML or JSON gives.

ResourceSlice, DeviceClass, ResourceClaim and ResourceClaimTemplate are kept as the dicts they
came in (what Kubernetes wrote is what gpufleet writes back); reading them checks every field
name, type and bound that the allocator relies on. A problem is a ``DraError`` (a ValueError) on
one line that names the object and the field, e.g. ``ResourceClaim default/c0:
spec.devices.requests[0].exactly.count: expected an integer >= 1, got 0``.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Callable

from gpufleet.documents import did_you_mean

API_VERSION = "resource.k8s.io/v1"
MAX_RESULTS_PER_CLAIM = 32  # resourceapi.AllocationResultsMaxSize
MAX_DEVICES_PER_SLICE = 128
MAX_REQUESTS = 32
MAX_SELECTORS = 32
MAX_SUBREQUESTS = 8

_METADATA_KEYS = ("name", "namespace", "uid", "labels", "annotations", "resourceVersion",
                  "generation", "creationTimestamp", "ownerReferences", "finalizers",
                  "managedFields", "generateName", "deletionTimestamp",
                  "deletionGracePeriodSeconds")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
                     r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")
ATTRIBUTE_KINDS = ("int", "bool", "string", "version")
LIST_ATTRIBUTE_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")


class DraError(ValueError):
    """A DRA object that cannot be used; the message names the object and the field."""


class _Where:
    """The object being read ("ResourceClaim default/c0") and how to name a field in it."""

    def __init__(self, kind: str, name: str) -> None:
        self.label = f"{kind} {name}"

    def fail(self, path: str, problem: str) -> DraError:
        return DraError(f"{self.label}: {path}: {problem}" if path else f"{self.label}: {problem}")


def _keys(w: _Where, obj: Any, path: str, allowed: tuple[str, ...],
          required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise w.fail(path, f"expected a mapping, got {type(obj).__name__}")
    for key in obj:
        if key not in allowed:
            raise w.fail(f"{path}.{key}" if path else str(key),
                         "unknown field" + did_you_mean(str(key), allowed))
    for key in required:
        if obj.get(key) is None:
            raise w.fail(f"{path}.{key}" if path else key, "required")
    return obj


def _str(w: _Where, value: Any, path: str, pattern: re.Pattern[str] | None = None,
         max_len: int = 253, what: str = "") -> str:
    if not isinstance(value, str) or not value:
        raise w.fail(path, f"expected a non-empty string, got {value!r}")
    if len(value) > max_len:
        raise w.fail(path, f"longer than {max_len} characters")
    if pattern is not None and not pattern.match(value):
        raise w.fail(path, f"{value!r} is not a valid {what or 'name'}")
    return value


def _int(w: _Where, value: Any, path: str, low: int = 0, high: int = 2**63 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise w.fail(path, f"expected an integer >= {low}" +
                     (f" and <= {high}" if high < 2**63 - 1 else "") + f", got {value!r}")
    return value


def _bool(w: _Where, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise w.fail(path, f"expected true or false, got {value!r}")
    return value


def _list(w: _Where, value: Any, path: str, max_items: int, min_items: int = 0) -> list[Any]:
    if not isinstance(value, list):
        raise w.fail(path, f"expected a list, got {type(value).__name__}")
    if len(value) > max_items:
        raise w.fail(path, f"more than {max_items} entries")
    if len(value) < min_items:
        raise w.fail(path, f"needs at least {min_items} entr{'y' if min_items == 1 else 'ies'}")
    return value


def quantity(w: _Where, value: Any, path: str) -> Decimal:
    """A quantity's exact value (the core's grammar), as a Decimal."""
    from gpufleet.k8s.extender.quantity import parse
    try:
        return parse(value)
    except ValueError as e:
        raise w.fail(path, str(e)) from None


def qualified_name(w: _Where, value: Any, path: str) -> str:
    """A QualifiedName: an optional DNS-subdomain domain, "/", and a C identifier."""
    text = _str(w, value, path, max_len=316)
    domain, sep, ident = text.rpartition("/")
    if (sep and not _DNS_SUBDOMAIN.match(domain)) or not _C_IDENTIFIER.match(ident) or len(ident) > 63:
        raise w.fail(path, f"{text!r} is not a valid qualified name (domain/identifier)")
    return text


def _metadata(kind: str, obj: Any, namespaced: bool) -> _Where:
    if not isinstance(obj, dict):
        raise DraError(f"{kind}: expected a mapping, got {type(obj).__name__}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise DraError(f"{kind}: metadata.name: required")
    name = meta["name"]
    if namespaced:
        ns = meta.get("namespace", "default")
        if not isinstance(ns, str) or not _DNS_LABEL.match(ns):
            raise DraError(f"{kind} {name}: metadata.namespace: {ns!r} is not a valid namespace")
        name = f"{ns}/{name}"
    w = _Where(kind, name)
    _keys(w, meta, "metadata", _METADATA_KEYS)
    _str(w, meta["name"], "metadata.name", _DNS_SUBDOMAIN)
    for key in ("labels", "annotations"):
        if key in meta and not (isinstance(meta[key], dict) and
                                all(isinstance(k, str) and isinstance(v, str) for k, v in meta[key].items())):
            raise w.fail(f"metadata.{key}", "expected a mapping of strings")
    if "apiVersion" in obj and obj["apiVersion"] != API_VERSION:
        raise w.fail("apiVersion", f"expected {API_VERSION!r}, got {obj['apiVersion']!r}")
    if "kind" in obj and obj["kind"] != kind:
        raise w.fail("kind", f"expected {kind!r}, got {obj['kind']!r}")
    return w


# --- ResourceSlice --------------------------------------------------------------------------------

def _node_selector(w: _Where, value: Any, path: str) -> None:
    _keys(w, value, path, ("nodeSelectorTerms",), ("nodeSelectorTerms",))
    terms = _list(w, value["nodeSelectorTerms"], f"{path}.nodeSelectorTerms", 1, 1)
    for i, term in enumerate(terms):
        tp = f"{path}.nodeSelectorTerms[{i}]"
        _keys(w, term, tp, ("matchExpressions", "matchFields"))
        for field in ("matchExpressions", "matchFields"):
            for j, req in enumerate(_list(w, term.get(field) or [], f"{tp}.{field}", 64)):
                rp = f"{tp}.{field}[{j}]"
                _keys(w, req, rp, ("key", "operator", "values"), ("key", "operator"))
                _str(w, req["key"], f"{rp}.key", max_len=316)
                if req["operator"] not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    raise w.fail(f"{rp}.operator", f"unknown operator {req['operator']!r}")
                for k, v in enumerate(_list(w, req.get("values") or [], f"{rp}.values", 64)):
                    _str(w, v, f"{rp}.values[{k}]", max_len=316)


def _node_placement(w: _Where, spec: dict[str, Any], path: str, slice_level: bool) -> None:
    """nodeName / nodeSelector / allNodes (/ perDeviceNodeSelection): at most one is set."""
    keys = ["nodeName", "nodeSelector", "allNodes"] + (["perDeviceNodeSelection"] if slice_level else [])
    chosen = [k for k in keys if spec.get(k) not in (None, False, "")]
    if len(chosen) > 1:
        raise w.fail(path, f"only one of {', '.join(keys)} may be set, got {', '.join(chosen)}")
    if slice_level and not chosen:
        raise w.fail(path, f"one of {', '.join(keys)} is required")
    if spec.get("nodeName") is not None:
        _str(w, spec["nodeName"], f"{path}.nodeName" if path != "spec" else "spec.nodeName", _DNS_SUBDOMAIN)
    if spec.get("nodeSelector") is not None:
        _node_selector(w, spec["nodeSelector"], f"{path}.nodeSelector")
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(flag) is not None:
            _bool(w, spec[flag], f"{path}.{flag}")


def _attribute(w: _Where, value: Any, path: str) -> None:
    kinds = ATTRIBUTE_KINDS + tuple(LIST_ATTRIBUTE_KINDS)
    _keys(w, value, path, kinds)
    if len(value) != 1:
        raise w.fail(path, f"exactly one of {', '.join(kinds)} must be set")
    (kind, v), = value.items()
    base = LIST_ATTRIBUTE_KINDS.get(kind, kind)
    items = _list(w, v, f"{path}.{kind}", 64, 1) if kind in LIST_ATTRIBUTE_KINDS else [v]
    for i, item in enumerate(items):
        ip = f"{path}.{kind}" + (f"[{i}]" if kind in LIST_ATTRIBUTE_KINDS else "")
        if base == "int":
            _int(w, item, ip, -2**63)
        elif base == "bool":
            _bool(w, item, ip)
        elif base == "string":
            if not isinstance(item, str) or len(item) > 64:
                raise w.fail(ip, f"expected a string of at most 64 characters, got {item!r}")
        elif not isinstance(item, str) or not _SEMVER.match(item):
            raise w.fail(ip, f"{item!r} is not a semantic version (semver 2.0.0)")


def _counters(w: _Where, value: Any, path: str) -> None:
    _keys(w, value, path, tuple(value) if isinstance(value, dict) else ())
    if not value:
        raise w.fail(path, "needs at least one counter")
    for name, c in value.items():
        _str(w, name, f"{path}.{name}", _DNS_LABEL, 63, "counter name")
        _keys(w, c, f"{path}.{name}", ("value",), ("value",))
        quantity(w, c["value"], f"{path}.{name}.value")


def _capacity(w: _Where, value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise w.fail(path, "expected a mapping")
    for name, cap in value.items():
        cp = f"{path}.{name}"
        qualified_name(w, name, cp)
        _keys(w, cap, cp, ("value", "requestPolicy"), ("value",))
        total = quantity(w, cap["value"], f"{cp}.value")
        policy = cap.get("requestPolicy")
        if policy is None:
            continue
        pp = f"{cp}.requestPolicy"
        _keys(w, policy, pp, ("default", "validValues", "validRange"))
        if "validValues" in policy and "validRange" in policy:
            raise w.fail(pp, "validValues and validRange are mutually exclusive")
        if "default" in policy:
            if quantity(w, policy["default"], f"{pp}.default") > total:
                raise w.fail(f"{pp}.default", "exceeds the capacity value")
        if "validValues" in policy:
            vals = [quantity(w, v, f"{pp}.validValues[{i}]")
                    for i, v in enumerate(_list(w, policy["validValues"], f"{pp}.validValues", 10, 1))]
            if vals != sorted(set(vals)):
                raise w.fail(f"{pp}.validValues", "must be sorted ascending without repeats")
        if "validRange" in policy:
            rp = f"{pp}.validRange"
            _keys(w, policy["validRange"], rp, ("min", "max", "step"), ("min",))
            low = quantity(w, policy["validRange"]["min"], f"{rp}.min")
            if "max" in policy["validRange"] and quantity(w, policy["validRange"]["max"], f"{rp}.max") < low:
                raise w.fail(f"{rp}.max", "is below min")
            if "step" in policy["validRange"] and quantity(w, policy["validRange"]["step"], f"{rp}.step") <= 0:
                raise w.fail(f"{rp}.step", "must be positive")


_DEVICE_KEYS = ("name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector",
                "allNodes", "taints", "bindsToNode", "bindingConditions",
                "bindingFailureConditions", "allowMultipleAllocations")


def _device(w: _Where, dev: Any, path: str, counter_sets: dict[str, dict[str, Any]] | None,
            per_device_nodes: bool) -> str:
    _keys(w, dev, path, _DEVICE_KEYS, ("name",))
    name = _str(w, dev["name"], f"{path}.name", _DNS_LABEL, 63, "device name")
    attrs = dev.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise w.fail(f"{path}.attributes", "expected a mapping")
    for key, value in attrs.items():
        qualified_name(w, key, f"{path}.attributes.{key}")
        _attribute(w, value, f"{path}.attributes.{key}")
    _capacity(w, dev.get("capacity") or {}, f"{path}.capacity")
    if len(attrs) + len(dev.get("capacity") or {}) > 32:
        raise w.fail(path, "more than 32 attributes and capacities")
    for i, use in enumerate(_list(w, dev.get("consumesCounters") or [], f"{path}.consumesCounters", 2)):
        up = f"{path}.consumesCounters[{i}]"
        _keys(w, use, up, ("counterSet", "counters"), ("counterSet", "counters"))
        _counters(w, use["counters"], f"{up}.counters")
        if counter_sets is not None:
            known = counter_sets.get(use["counterSet"])
            if known is None:
                raise w.fail(f"{up}.counterSet", f"unknown counter set {use['counterSet']!r}")
            for cname in use["counters"]:
                if cname not in known:
                    raise w.fail(f"{up}.counters.{cname}", f"not a counter of set {use['counterSet']!r}")
    if per_device_nodes:
        _node_placement(w, dev, path, slice_level=False)
        if not any(dev.get(k) not in (None, False, "") for k in ("nodeName", "nodeSelector", "allNodes")):
            raise w.fail(path, "perDeviceNodeSelection needs nodeName, nodeSelector or allNodes here")
    else:
        for k in ("nodeName", "nodeSelector", "allNodes"):
            if dev.get(k) is not None:
                raise w.fail(f"{path}.{k}", "only allowed with spec.perDeviceNodeSelection")
    for i, taint in enumerate(_list(w, dev.get("taints") or [], f"{path}.taints", 16)):
        tp = f"{path}.taints[{i}]"
        _keys(w, taint, tp, ("key", "value", "effect", "timeAdded"), ("key", "effect"))
        qualified_name(w, taint["key"], f"{tp}.key")
        if taint["effect"] not in TAINT_EFFECTS:
            raise w.fail(f"{tp}.effect", f"expected one of {', '.join(TAINT_EFFECTS)}, got {taint['effect']!r}")
    for flag in ("bindsToNode", "allowMultipleAllocations"):
        if dev.get(flag) is not None:
            _bool(w, dev[flag], f"{path}.{flag}")
    for key in ("bindingConditions", "bindingFailureConditions"):
        for i, c in enumerate(_list(w, dev.get(key) or [], f"{path}.{key}", 4)):
            _str(w, c, f"{path}.{key}[{i}]", max_len=316)
    return name


def check_slice(obj: Any) -> dict[str, Any]:
    """A ResourceSlice, checked; returned unchanged."""
    w = _metadata("ResourceSlice", obj, namespaced=False)
    _keys(w, obj, "", ("apiVersion", "kind", "metadata", "spec"), ("spec",))
    spec = _keys(w, obj["spec"], "spec", ("driver", "pool", "nodeName", "nodeSelector", "allNodes",
                                          "perDeviceNodeSelection", "devices", "sharedCounters"),
                 ("driver", "pool"))
    _str(w, spec["driver"], "spec.driver", _DNS_SUBDOMAIN, 63, "driver name")
    pool = _keys(w, spec["pool"], "spec.pool", ("name", "generation", "resourceSliceCount"),
                 ("name", "resourceSliceCount"))
    _str(w, pool["name"], "spec.pool.name", max_len=253)
    _int(w, pool.get("generation", 0), "spec.pool.generation")
    _int(w, pool["resourceSliceCount"], "spec.pool.resourceSliceCount", 1)
    counter_sets: dict[str, dict[str, Any]] = {}
    for i, cs in enumerate(_list(w, spec.get("sharedCounters") or [], "spec.sharedCounters", 8)):
        cp = f"spec.sharedCounters[{i}]"
        _keys(w, cs, cp, ("name", "counters"), ("name", "counters"))
        name = _str(w, cs["name"], f"{cp}.name", _DNS_LABEL, 63, "counter set name")
        if name in counter_sets:
            raise w.fail(f"{cp}.name", f"duplicate counter set {name!r}")
        _counters(w, cs["counters"], f"{cp}.counters")
        counter_sets[name] = cs["counters"]
    if counter_sets and spec.get("devices"):
        raise w.fail("spec.devices", "a slice with sharedCounters publishes no devices "
                     "(the devices that consume them go in other slices of the pool)")
    has_placement = any(spec.get(k) not in (None, False, "")
                        for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"))
    if spec.get("devices") or has_placement or not counter_sets:
        _node_placement(w, spec, "spec", slice_level=True)
    per_device = bool(spec.get("perDeviceNodeSelection"))
    seen: set[str] = set()
    # Counter sets come from other slices of the pool: a device naming one the pool lacks makes
    # the pool invalid when it is gathered (pools.py), as Kubernetes decides it.
    known = None
    for i, dev in enumerate(_list(w, spec.get("devices") or [], "spec.devices", MAX_DEVICES_PER_SLICE)):
        name = _device(w, dev, f"spec.devices[{i}]", known, per_device)
        if name in seen:
            raise w.fail(f"spec.devices[{i}].name", f"duplicate device name {name!r}")
        seen.add(name)
    return obj


# --- DeviceClass ----------------------------------------------------------------------------------

def _selectors(w: _Where, value: Any, path: str) -> None:
    for i, sel in enumerate(_list(w, value or [], path, MAX_SELECTORS)):
        sp = f"{path}[{i}]"
        _keys(w, sel, sp, ("cel",), ("cel",))
        _keys(w, sel["cel"], f"{sp}.cel", ("expression",), ("expression",))
        expr = sel["cel"]["expression"]
        if not isinstance(expr, str) or not expr.strip():
            raise w.fail(f"{sp}.cel.expression", "expected a non-empty CEL expression")
        if len(expr) > 10 * 1024:
            raise w.fail(f"{sp}.cel.expression", "longer than 10Ki characters")


def _config(w: _Where, value: Any, path: str, with_requests: bool) -> None:
    for i, cfg in enumerate(_list(w, value or [], path, 32)):
        cp = f"{path}[{i}]"
        _keys(w, cfg, cp, ("opaque", "requests") if with_requests else ("opaque",))
        if "opaque" in cfg:
            _keys(w, cfg["opaque"], f"{cp}.opaque", ("driver", "parameters"), ("driver", "parameters"))
            _str(w, cfg["opaque"]["driver"], f"{cp}.opaque.driver", _DNS_SUBDOMAIN, 63, "driver name")


def check_class(obj: Any) -> dict[str, Any]:
    """A DeviceClass, checked; returned unchanged."""
    w = _metadata("DeviceClass", obj, namespaced=False)
    _keys(w, obj, "", ("apiVersion", "kind", "metadata", "spec"))
    spec = _keys(w, obj.get("spec") or {}, "spec", ("selectors", "config", "extendedResourceName"))
    _selectors(w, spec.get("selectors"), "spec.selectors")
    _config(w, spec.get("config"), "spec.config", with_requests=False)
    if spec.get("extendedResourceName") is not None:
        qualified_name(w, spec["extendedResourceName"], "spec.extendedResourceName")
    return obj


# --- ResourceClaim / ResourceClaimTemplate ---------------------------------------------------------

_EXACT_KEYS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
               "tolerations", "capacity")


def _tolerations(w: _Where, value: Any, path: str) -> None:
    for i, t in enumerate(_list(w, value or [], path, 16)):
        tp = f"{path}[{i}]"
        _keys(w, t, tp, ("key", "operator", "value", "effect", "tolerationSeconds"))
        op = t.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise w.fail(f"{tp}.operator", f"expected Equal or Exists, got {op!r}")
        if op == "Exists" and t.get("value"):
            raise w.fail(f"{tp}.value", "must be empty with operator Exists")
        if t.get("key"):
            qualified_name(w, t["key"], f"{tp}.key")
        elif op != "Exists":
            raise w.fail(f"{tp}.key", "required unless operator is Exists")
        if t.get("effect") not in (None, "", *TAINT_EFFECTS):
            raise w.fail(f"{tp}.effect", f"unknown effect {t['effect']!r}")


def _exact(w: _Where, req: Any, path: str, admin_allowed: bool) -> None:
    _keys(w, req, path, _EXACT_KEYS if admin_allowed else tuple(k for k in _EXACT_KEYS if k != "adminAccess"),
          ("deviceClassName",))
    _str(w, req["deviceClassName"], f"{path}.deviceClassName", _DNS_SUBDOMAIN, 253, "class name")
    _selectors(w, req.get("selectors"), f"{path}.selectors")
    mode = req.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        raise w.fail(f"{path}.allocationMode", f"expected ExactCount or All, got {mode!r}")
    if mode == "All" and req.get("count") is not None:
        raise w.fail(f"{path}.count", "must not be set with allocationMode All")
    if mode == "ExactCount" and req.get("count") is not None:
        _int(w, req["count"], f"{path}.count", 1, MAX_RESULTS_PER_CLAIM)
    if req.get("adminAccess") is not None:
        _bool(w, req["adminAccess"], f"{path}.adminAccess")
    _tolerations(w, req.get("tolerations"), f"{path}.tolerations")
    if req.get("capacity") is not None:
        cp = f"{path}.capacity"
        _keys(w, req["capacity"], cp, ("requests",))
        reqs = req["capacity"].get("requests") or {}
        if not isinstance(reqs, dict):
            raise w.fail(f"{cp}.requests", "expected a mapping")
        for name, v in reqs.items():
            qualified_name(w, name, f"{cp}.requests.{name}")
            quantity(w, v, f"{cp}.requests.{name}")


def _claim_spec(w: _Where, spec: Any, path: str) -> None:
    spec = _keys(w, spec, path, ("devices",))
    devices = _keys(w, spec.get("devices") or {}, f"{path}.devices", ("requests", "constraints", "config"))
    names: list[str] = []
    sub_names: set[str] = set()
    for i, req in enumerate(_list(w, devices.get("requests") or [], f"{path}.devices.requests", MAX_REQUESTS)):
        rp = f"{path}.devices.requests[{i}]"
        _keys(w, req, rp, ("name", "exactly", "firstAvailable"), ("name",))
        name = _str(w, req["name"], f"{rp}.name", _DNS_LABEL, 63, "request name")
        if name in names:
            raise w.fail(f"{rp}.name", f"duplicate request name {name!r}")
        names.append(name)
        if ("exactly" in req) == ("firstAvailable" in req):
            raise w.fail(rp, "exactly one of exactly or firstAvailable must be set")
        if "exactly" in req:
            _exact(w, req["exactly"], f"{rp}.exactly", admin_allowed=True)
            continue
        subs = _list(w, req["firstAvailable"], f"{rp}.firstAvailable", MAX_SUBREQUESTS, 1)
        seen: set[str] = set()
        for j, sub in enumerate(subs):
            sp = f"{rp}.firstAvailable[{j}]"
            if not isinstance(sub, dict):
                raise w.fail(sp, "expected a mapping")
            sname = _str(w, sub.get("name"), f"{sp}.name", _DNS_LABEL, 63, "subrequest name")
            if sname in seen:
                raise w.fail(f"{sp}.name", f"duplicate subrequest name {sname!r}")
            seen.add(sname)
            sub_names.add(f"{name}/{sname}")
            _exact(w, {k: v for k, v in sub.items() if k != "name"}, sp, admin_allowed=False)
    for i, con in enumerate(_list(w, devices.get("constraints") or [], f"{path}.devices.constraints", 32)):
        cp = f"{path}.devices.constraints[{i}]"
        _keys(w, con, cp, ("requests", "matchAttribute", "distinctAttribute"))
        if ("matchAttribute" in con) == ("distinctAttribute" in con):
            raise w.fail(cp, "exactly one of matchAttribute or distinctAttribute must be set")
        attr = con.get("matchAttribute", con.get("distinctAttribute"))
        qualified = qualified_name(w, attr, f"{cp}.{'matchAttribute' if 'matchAttribute' in con else 'distinctAttribute'}")
        if "/" not in qualified:
            raise w.fail(f"{cp}.matchAttribute" if "matchAttribute" in con else f"{cp}.distinctAttribute",
                         "must be fully qualified (domain/name)")
        for j, r in enumerate(_list(w, con.get("requests") or [], f"{cp}.requests", MAX_REQUESTS)):
            if r not in names and r not in sub_names:
                raise w.fail(f"{cp}.requests[{j}]", f"unknown request {r!r}")
    _config(w, devices.get("config"), f"{path}.devices.config", with_requests=True)


_CLAIM_STATUS_KEYS = ("allocation", "reservedFor", "devices")


def check_claim(obj: Any) -> dict[str, Any]:
    """A ResourceClaim, checked (its status too, when it has an allocation); returned unchanged."""
    w = _metadata("ResourceClaim", obj, namespaced=True)
    _keys(w, obj, "", ("apiVersion", "kind", "metadata", "spec", "status"), ("spec",))
    _claim_spec(w, obj["spec"], "spec")
    status = obj.get("status")
    if status is not None:
        _keys(w, status, "status", _CLAIM_STATUS_KEYS)
        if status.get("allocation") is not None:
            check_allocation(w, status["allocation"], "status.allocation")
        for i, ref in enumerate(_list(w, status.get("reservedFor") or [], "status.reservedFor", 256)):
            _keys(w, ref, f"status.reservedFor[{i}]", ("apiGroup", "resource", "name", "uid"), ("resource", "name"))
    return obj


def check_allocation(w: _Where, alloc: Any, path: str) -> None:
    _keys(w, alloc, path, ("devices", "nodeSelector", "allocationTimestamp"))
    devices = _keys(w, alloc.get("devices") or {}, f"{path}.devices", ("results", "config"))
    for i, r in enumerate(_list(w, devices.get("results") or [], f"{path}.devices.results", MAX_RESULTS_PER_CLAIM)):
        rp = f"{path}.devices.results[{i}]"
        _keys(w, r, rp, ("request", "driver", "pool", "device", "adminAccess", "tolerations",
                         "bindingConditions", "bindingFailureConditions", "shareID", "consumedCapacity"),
              ("request", "driver", "pool", "device"))
        for key in ("request", "driver", "pool", "device"):
            _str(w, r[key], f"{rp}.{key}")
        for name, v in (r.get("consumedCapacity") or {}).items():
            quantity(w, v, f"{rp}.consumedCapacity.{name}")
    if alloc.get("nodeSelector") is not None:
        _node_selector(w, alloc["nodeSelector"], f"{path}.nodeSelector")


def check_claim_template(obj: Any) -> dict[str, Any]:
    """A ResourceClaimTemplate, checked; returned unchanged."""
    w = _metadata("ResourceClaimTemplate", obj, namespaced=True)
    _keys(w, obj, "", ("apiVersion", "kind", "metadata", "spec"), ("spec",))
    spec = _keys(w, obj["spec"], "spec", ("metadata", "spec"), ("spec",))
    _claim_spec(w, spec["spec"], "spec.spec")
    return obj


def claim_from_template(template: dict[str, Any], name: str, namespace: str | None = None) -> dict[str, Any]:
    """The ResourceClaim a template stamps out (as the resourceclaim controller does)."""
    import copy
    check_claim_template(template)
    meta = dict(template["spec"].get("metadata") or {})
    meta["name"] = name
    meta["namespace"] = namespace or template["metadata"].get("namespace", "default")
    return check_claim({"apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": meta,
                        "spec": copy.deepcopy(template["spec"]["spec"])})


CHECKERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "ResourceSlice": check_slice,
    "DeviceClass": check_class,
    "ResourceClaim": check_claim,
    "ResourceClaimTemplate": check_claim_template,
}
