"""CEL as Kubernetes evaluates it for DRA selectors, through cel-expr-python (Google's CEL runtime
for Python, a binding of cel-cpp; docs/dra.md says why this one).

A selector sees ``device`` with ``driver``, ``attributes[domain][name]``, ``capacity[domain][name]``
and ``allowMultipleAllocations``. Attribute and capacity names without a domain belong to the
driver's domain; a domain the device does not have reads as an empty map (so ``has()`` works and a
missing name is a "no such key" error), as in Kubernetes. Quantities and versions are values of
their own types with Kubernetes' functions: ``quantity("80Gi")``, ``isQuantity``, ``compareTo``,
``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``,
``sign``, ``isInteger``; ``semver("1.2.3")``, ``isSemver``, ``major``, ``minor``, ``patch`` and
the same comparisons. The strings and bindings extensions (``lowerAscii``, ``split``,
``cel.bind``...) and list attributes' ``includes`` are there too.

Each expression is compiled once (``compile_selector``, cached per text) and evaluated once per
distinct device (``Selector.matches``, cached per device key by the caller). An expression whose
estimated worst-case cost passes 1,000,000 (cel_cost.py) is refused when compiled.
"""
from __future__ import annotations

import functools
import re
import threading
from decimal import Decimal
from typing import Any

from gpufleet._extras import require
from gpufleet.dra.cel_cost import MAX_COST, estimated_cost
from gpufleet.dra.objects import _SEMVER

_TYPE_PACKAGE = "gpufleet.dra.cel"


class CelError(ValueError):
    """A selector that does not compile, or fails on a device; the caller adds which object."""


@functools.lru_cache(maxsize=1)
def _runtime() -> tuple[Any, Any, Any, Any]:
    for name in ("cel_expr_python", "google.protobuf"):
        require(name, "dra", "gpufleet.dra's CEL selectors")
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_strings
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    # Quantities and versions are one CEL message type (kind, text): cel-cpp keys a function's
    # runtime overloads by argument kind, so compareTo could not tell two message types apart;
    # the functions read the kind and refuse a mix at run time.
    fdp = descriptor_pb2.FileDescriptorProto(name="gpufleet_dra_cel.proto", package=_TYPE_PACKAGE,
                                             syntax="proto3")
    msg = fdp.message_type.add(name="Value")
    for number, name in ((1, "kind"), (2, "text")):
        msg.field.add(name=name, number=number, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    value_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_TYPE_PACKAGE}.Value"))
    quantity_cls = lambda text: value_cls(kind="quantity", text=text)  # noqa: E731
    semver_cls = lambda text: value_cls(kind="semver", text=text)  # noqa: E731
    env = cel.NewEnv(pool, variables={"device": cel.Type.DYN},
                     functions=_functions(cel, quantity_cls, semver_cls),
                     extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings()])
    return cel, env, quantity_cls, semver_cls


def _quantity_value(text: str) -> Decimal:
    from gpufleet.k8s.extender.quantity import parse
    return parse(text)


def _semver_key(text: str) -> tuple[Any, ...]:
    m = _SEMVER.match(text)
    if m is None:
        raise ValueError(f"invalid semver {text!r}")
    pre = m.group(4)
    # Semver precedence: a pre-release sorts before the release; identifiers compare numerically
    # when numeric, numbers before words.
    pre_key: tuple[Any, ...] = (1,) if pre is None else (0, *(
        (0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), pre_key)


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _functions(cel: Any, quantity_cls: Any, semver_cls: Any) -> list[Any]:
    V = cel.Type(f"{_TYPE_PACKAGE}.Value")
    Q = S = V
    T = cel.Type

    def qv(q: Any) -> Decimal:
        if q.kind != "quantity":
            raise ValueError(f"no such overload: expected a quantity, got a {q.kind}")
        return _quantity_value(q.text)

    def sv(s: Any) -> tuple[Any, ...]:
        if s.kind != "semver":
            raise ValueError(f"no such overload: expected a semver, got a {s.kind}")
        return _semver_key(s.text)

    def make_quantity(text: str) -> Any:
        _quantity_value(text)
        return quantity_cls(text=text)

    def make_semver(text: str) -> Any:
        _semver_key(text)
        return semver_cls(text=text)

    def is_quantity(text: str) -> bool:
        try:
            _quantity_value(text)
            return True
        except ValueError:
            return False

    def q_text(value: Decimal) -> Any:
        return quantity_cls(text=format(value.normalize(), "f") if value == value.to_integral() else str(value))

    def as_integer(q: Any) -> int:
        v = qv(q)
        if v != v.to_integral_value() or not -2**63 <= v < 2**63:
            raise ValueError(f"cannot convert value to integer: {q.text}")
        return int(v)

    def ordered(a: Any, b: Any) -> tuple[Any, Any]:
        return (qv(a), qv(b)) if a.kind == "quantity" else (sv(a), sv(b))

    def decl(name: str, *overloads: tuple[str, Any, list[Any], bool, Any]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=member, impl=impl)
                                       for oid, ret, params, member, impl in overloads])

    return [
        decl("quantity", ("gpufleet_quantity", Q, [T.STRING], False, make_quantity)),
        decl("isQuantity", ("gpufleet_is_quantity", T.BOOL, [T.STRING], False, is_quantity)),
        decl("semver", ("gpufleet_semver", S, [T.STRING], False, make_semver)),
        decl("isSemver", ("gpufleet_is_semver", T.BOOL, [T.STRING], False,
                          lambda s: _SEMVER.match(s) is not None)),
        decl("compareTo", ("gpufleet_compare", T.INT, [V, V], True, lambda a, b: _cmp(*ordered(a, b)))),
        decl("isGreaterThan", ("gpufleet_gt", T.BOOL, [V, V], True, lambda a, b: _cmp(*ordered(a, b)) > 0)),
        decl("isLessThan", ("gpufleet_lt", T.BOOL, [V, V], True, lambda a, b: _cmp(*ordered(a, b)) < 0)),
        decl("add",
             ("gpufleet_q_add", Q, [Q, Q], True, lambda a, b: q_text(qv(a) + qv(b))),
             ("gpufleet_q_add_int", Q, [Q, T.INT], True, lambda a, b: q_text(qv(a) + b))),
        decl("sub",
             ("gpufleet_q_sub", Q, [Q, Q], True, lambda a, b: q_text(qv(a) - qv(b))),
             ("gpufleet_q_sub_int", Q, [Q, T.INT], True, lambda a, b: q_text(qv(a) - b))),
        decl("sign", ("gpufleet_q_sign", T.INT, [Q], True, lambda a: _cmp(qv(a), 0))),
        decl("isInteger", ("gpufleet_q_is_integer", T.BOOL, [Q], True,
                           lambda a: qv(a) == qv(a).to_integral_value() and -2**63 <= qv(a) < 2**63)),
        decl("asInteger", ("gpufleet_q_as_integer", T.INT, [Q], True, as_integer)),
        decl("asApproximateFloat", ("gpufleet_q_as_float", T.DOUBLE, [Q], True, lambda a: float(qv(a)))),
        decl("major", ("gpufleet_s_major", T.INT, [S], True, lambda s: sv(s)[0])),
        decl("minor", ("gpufleet_s_minor", T.INT, [S], True, lambda s: sv(s)[1])),
        decl("patch", ("gpufleet_s_patch", T.INT, [S], True, lambda s: sv(s)[2])),
        # List attributes: includes(x) holds when x is an element; on a scalar, when it is x.
        decl("includes",
             # (cel-cpp matches run-time overloads by concrete kinds, so one per element type)
             ("gpufleet_ints_includes", T.BOOL, [T.List(T.DYN), T.INT], True, lambda a, b: b in list(a)),
             ("gpufleet_strings_includes", T.BOOL, [T.List(T.DYN), T.STRING], True, lambda a, b: b in list(a)),
             ("gpufleet_bools_includes", T.BOOL, [T.List(T.DYN), T.BOOL], True, lambda a, b: b in list(a)),
             ("gpufleet_semvers_includes", T.BOOL, [T.List(T.DYN), V], True,
              lambda a, b: any(sv(x) == sv(b) for x in a)),
             ("gpufleet_int_includes", T.BOOL, [T.INT, T.INT], True, lambda a, b: a == b),
             ("gpufleet_string_includes", T.BOOL, [T.STRING, T.STRING], True, lambda a, b: a == b),
             ("gpufleet_bool_includes", T.BOOL, [T.BOOL, T.BOOL], True, lambda a, b: a == b),
             ("gpufleet_semver_includes", T.BOOL, [V, V], True, lambda a, b: sv(a) == sv(b))),
    ]


_DOMAIN_REF = re.compile(r'device\.(?:attributes|capacity)\s*\[\s*"([^"\\]*)"\s*\]')


class Selector:
    """One compiled selector expression."""

    def __init__(self, expression: str, program: Any) -> None:
        self.expression = expression
        self._program = program
        self._lock = threading.Lock()
        # Domains the expression names: a device without one sees an empty map there.
        self._domains = set(_DOMAIN_REF.findall(expression))

    def matches(self, device: dict[str, Any]) -> bool:
        """The expression on one device (as ``device_input`` builds it); CelError when it fails
        or does not give a bool."""
        cel, _, _, _ = _runtime()
        for key in ("attributes", "capacity"):
            missing = self._domains.difference(device[key])
            if missing:
                device = {**device, key: {**device[key], **{d: {} for d in missing}}}
        with self._lock:  # one evaluation at a time per program (the runtime's arena is shared)
            result = self._program.eval(data={"device": device})
        if result.type() == cel.Type.ERROR:
            raise CelError(_one_line(str(result.value())))
        value = result.value()
        if not isinstance(value, bool):
            raise CelError(f"result is {type(value).__name__}, not bool")
        return value


def _one_line(text: str) -> str:
    return " ".join(text.split())


_compiled: dict[str, Selector] = {}
_compiled_lock = threading.Lock()
_MAX_COMPILED = 4096


def compile_selector(expression: str) -> Selector:
    """The compiled expression (cached per text); CelError says why it does not compile or why it
    cannot give a bool."""
    with _compiled_lock:
        hit = _compiled.get(expression)
    if hit is not None:
        return hit
    cel, env, _, _ = _runtime()
    try:
        program = env.compile(expression)
    except RuntimeError as e:
        raise CelError("compilation failed: " + _one_line(re.sub(r"^[A-Z_]+: ", "", str(e)))) from None
    rtype = program.return_type()
    if rtype != cel.Type.BOOL and rtype != cel.Type.DYN:
        raise CelError(f"must evaluate to bool, not {rtype.name().lower()}")
    cost = estimated_cost(program.serialize())
    if cost > MAX_COST:
        raise CelError(f"estimated cost {cost:,} passes the limit of {MAX_COST:,} (cel_cost.py)")
    selector = Selector(expression, program)
    with _compiled_lock:
        if len(_compiled) >= _MAX_COMPILED:
            _compiled.clear()
        _compiled.setdefault(expression, selector)
        return _compiled[expression]


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


def device_input(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """What a selector sees as ``device`` for one ResourceSlice device entry."""
    from gpufleet.dra.objects import LIST_ATTRIBUTE_KINDS
    _, _, quantity_cls, semver_cls = _runtime()
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        domain, ident = _split(name, driver)
        (kind, value), = attr.items()
        if kind == "version":
            value = semver_cls(text=value)
        elif kind == "versions":
            value = [semver_cls(text=v) for v in value]
        elif kind in LIST_ATTRIBUTE_KINDS:
            value = list(value)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split(name, driver)
        capacity.setdefault(domain, {})[ident] = quantity_cls(text=str(cap["value"]))
    return {"driver": driver, "attributes": attributes, "capacity": capacity,
            "allowMultipleAllocations": bool(device.get("allowMultipleAllocations", False))}
