"""CEL selectors evaluated as Kubernetes evaluates them for DRA: the device's driver, attributes
and capacity by domain (names without a domain belong to the driver), quantities and semantic
versions with their functions, has(), in, string functions and bindings; compile and run-time
errors name the claim or class, the request and the expression."""
from __future__ import annotations

import pytest

from gpufleet.dra import allocate
from gpufleet.dra.cel import CelError, compile_selector, device_input

DEVICE = {"name": "gpu-0", "allowMultipleAllocations": True,
          "attributes": {"model": {"string": "NVIDIA H100 80GB HBM3"}, "numa": {"int": 1},
                         "mig": {"bool": False}, "driverVersion": {"version": "550.54.15"},
                         "other.example.com/rack": {"string": "r7"},
                         "links": {"ints": [0, 2]}},
          "capacity": {"memory": {"value": "80Gi"}, "cores": {"value": "100"}}}


def run(expression: str) -> bool:
    return compile_selector(expression).matches(device_input("gpu.example.com", DEVICE))


@pytest.mark.parametrize("expression,expected", [
    ('device.driver == "gpu.example.com"', True),
    ('device.attributes["gpu.example.com"].numa == 1', True),
    ('device.attributes["gpu.example.com"].model.startsWith("NVIDIA H100")', True),
    ('device.attributes["gpu.example.com"].model.lowerAscii().contains("h100")', True),
    ('device.attributes["gpu.example.com"].model.split(" ")[1] == "H100"', True),
    ('device.attributes["gpu.example.com"].model.matches("A100|H100")', True),
    ('device.attributes["other.example.com"].rack in ["r6", "r7"]', True),
    ('has(device.attributes["gpu.example.com"].mig) && !device.attributes["gpu.example.com"].mig', True),
    ('has(device.attributes["nvidia.com"].model)', False),  # a domain the device lacks is empty
    ('has(device.attributes["gpu.example.com"].colour)', False),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) == 0', True),
    ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("40Gi"))', True),
    ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("85899345921"))', True),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("81920Mi")) == 0', True),
    ('device.capacity["gpu.example.com"].cores.asInteger() == 100', True),
    ('device.capacity["gpu.example.com"].memory.sub(quantity("40Gi")).compareTo(quantity("40Gi")) == 0', True),
    ('isQuantity("1.5Gi") && !isQuantity("lots")', True),
    ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("535.0.0"))', True),
    ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("550.100.0"))', True),
    ('device.attributes["gpu.example.com"].driverVersion.major() == 550', True),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0-alpha.2").compareTo(semver("1.0.0-alpha.10")) < 0', True),
    ('device.attributes["gpu.example.com"].links.includes(2)', True),
    ('device.allowMultipleAllocations', True),
    ('cel.bind(a, device.attributes["gpu.example.com"], a.numa == 1 && a.model != "")', True),
])
def test_kubernetes_dra_cel(expression: str, expected: bool) -> None:
    assert run(expression) is expected


@pytest.mark.parametrize("expression,message", [
    ('device.driver ==', "compilation failed"),
    ('device.driver', "result is str, not bool"),
    ('1 + 1', "must evaluate to bool, not int"),
    ('device.attributes["gpu.example.com"].colour == "red"', "colour"),
    ('quantity("lots").sign() == 1', "invalid quantity"),
    ('quantity("1").compareTo(semver("1.0.0")) == 0', "expected a quantity, got a semver"),
])
def test_cel_errors(expression: str, message: str) -> None:
    with pytest.raises(CelError) as e:
        run(expression)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def _scenario(expression: str, where: str) -> dict:
    cls = {"metadata": {"name": "gpu"}, "spec": {"selectors": [
        {"cel": {"expression": expression if where == "class" else "true"}}]}}
    claim = {"metadata": {"name": "c0", "namespace": "default"}, "spec": {"devices": {"requests": [
        {"name": "r0", "exactly": {"deviceClassName": "gpu", "selectors": [
            {"cel": {"expression": expression if where == "claim" else "true"}}]}}]}}}
    sl = {"metadata": {"name": "s0"}, "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {
        "name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [DEVICE]}}
    return {"node": "n1", "claims": [claim], "classes": [cls], "slices": [sl]}


@pytest.mark.parametrize("where,prefix", [("claim", "claim default/c0, request r0: selector #0"),
                                          ("class", "class gpu: selector #0")])
def test_allocation_errors_name_the_claim_request_and_expression(where: str, prefix: str) -> None:
    expr = 'device.attributes["gpu.example.com"].colour == "red"'
    s = _scenario(expr, where)
    out = allocate(s["node"], s["claims"], s["classes"], s["slices"])
    assert out.verdict == "error"
    assert out.reason.startswith(prefix) and expr in out.reason and "gpu.example.com/n1/gpu-0" in out.reason
    s = _scenario('device.attributes["gpu.example.com"].numa == 1', where)
    assert allocate(s["node"], s["claims"], s["classes"], s["slices"]).ok


TAGS = 'device.attributes["gpu.example.com"].tags'
TOO_EXPENSIVE = f'{TAGS}.all(a, {TAGS}.all(b, {TAGS}.all(c, a == b && b == c)))'


def test_selector_costs_are_estimated_and_bounded() -> None:
    from gpufleet.dra.cel import _runtime
    from gpufleet.dra.cel_cost import estimated_cost
    _, env, _, _ = _runtime()

    def cost(expression: str) -> int:
        return estimated_cost(env.compile(expression).serialize())

    assert cost('device.driver == "x"') == 4  # the call, its select, ident and constant
    # A comprehension costs its range's size times its body: a literal has its length, a
    # device's list at most 64.
    per_entry = cost("[1].all(x, x > 0)") - cost("[].all(x, x > 0)")
    assert per_entry > 1 and cost("[1, 2, 3, 4].all(x, x > 0)") - cost("[1, 2].all(x, x > 0)") == 2 * per_entry
    two = cost(f"{TAGS}.all(a, {TAGS}.all(b, a == b))")
    assert 64 * 64 < two < 1_000_000 < cost(TOO_EXPENSIVE)
    with pytest.raises(CelError, match=r"^estimated cost [\d,]+ passes the limit of 1,000,000 \(cel_cost.py\)$"):
        compile_selector(TOO_EXPENSIVE)


def test_a_selector_too_expensive_is_refused_naming_the_claim_and_request() -> None:
    s = _scenario(TOO_EXPENSIVE, "claim")
    out = allocate(s["node"], s["claims"], s["classes"], s["slices"])
    assert out.verdict == "error"
    assert out.reason.startswith("claim default/c0, request r0: selector #0")
    assert "passes the limit of 1,000,000" in out.reason and "\n" not in out.reason


def test_each_expression_is_compiled_once() -> None:
    assert compile_selector('device.driver != ""') is compile_selector('device.driver != ""')
