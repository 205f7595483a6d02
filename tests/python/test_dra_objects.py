"""DRA objects are read strictly: a bad field is one ValueError line naming the object and the
field; good objects pass unchanged; claims from templates are what the template says."""
from __future__ import annotations

import copy

import pytest

from gpufleet.dra import (DraError, check_claim, check_claim_template, check_class, check_slice,
                          claim_from_template)

SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s0"},
         "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                  "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "H100"}, "numa": {"int": 0},
                                                               "driverVersion": {"version": "1.2.3"}},
                               "capacity": {"memory": {"value": "80Gi"}},
                               "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
                               "taints": [{"key": "example.com/unhealthy", "effect": "NoSchedule"}]}]}}
CLAIM = {"metadata": {"name": "c0", "namespace": "ml"}, "spec": {"devices": {
    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2,
                                             "selectors": [{"cel": {"expression": "true"}}]}},
                 {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "nic"},
                                                    {"name": "slow", "deviceClassName": "nic"}]}],
    "constraints": [{"requests": ["gpu", "nic/fast"], "matchAttribute": "gpu.example.com/numa"}]}}}
CLASS = {"metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def test_good_objects_pass_unchanged() -> None:
    for check, obj in ((check_slice, SLICE), (check_claim, CLAIM), (check_class, CLASS)):
        before = copy.deepcopy(obj)
        assert check(obj) is obj
        assert obj == before


def _set(obj: dict, path: str, value: object) -> dict:
    out = copy.deepcopy(obj)
    parts = path.split(".")
    cur = out
    for p in parts[:-1]:
        cur = cur[int(p)] if p.isdigit() else cur[p]
    last = parts[-1]
    if value is KeyError:
        del cur[last]
    elif last.isdigit():
        cur[int(last)] = value
    else:
        cur[last] = value
    return out


@pytest.mark.parametrize("path,value,message", [
    ("spec.driver", "Bad_Driver", "ResourceSlice s0: spec.driver: 'Bad_Driver' is not a valid driver name"),
    ("spec.pool.resourceSliceCount", 0, "ResourceSlice s0: spec.pool.resourceSliceCount: expected an integer >= 1, got 0"),
    ("spec.pool.generation", "1", "ResourceSlice s0: spec.pool.generation: expected an integer >= 0, got '1'"),
    ("spec.devices.0.attributes.numa", {"int": 1, "string": "x"}, "exactly one of"),
    ("spec.devices.0.attributes.numa", {"float": 1.5}, "spec.devices[0].attributes.numa.float: unknown field"),
    ("spec.devices.0.attributes.driverVersion", {"version": "1.2"}, "is not a semantic version"),
    ("spec.devices.0.capacity.memory", {"value": "lots"}, "spec.devices[0].capacity.memory.value: invalid quantity"),
    ("spec.sharedCounters", [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
     "spec.devices: a slice with sharedCounters publishes no devices"),
    ("spec.devices.0.taints.0.effect", "Sometimes", "spec.devices[0].taints[0].effect: expected one of"),
    ("spec.devices.0.nodeName", "node-1", "only allowed with spec.perDeviceNodeSelection"),
    ("spec.allNodes", True, "only one of nodeName, nodeSelector, allNodes"),
    ("spec.devices.0.colour", "red", "spec.devices[0].colour: unknown field"),
    ("spec.drivr", "x", "spec.drivr: unknown field; did you mean \"driver\"?"),
])
def test_bad_slices_name_the_field(path: str, value: object, message: str) -> None:
    with pytest.raises(DraError, match=None) as e:
        check_slice(_set(SLICE, path, value))
    assert message in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("ResourceSlice s0: ")


@pytest.mark.parametrize("path,value,message", [
    ("spec.devices.requests.0.exactly.count", 0, "ResourceClaim ml/c0: spec.devices.requests[0].exactly.count: expected an integer >= 1"),
    ("spec.devices.requests.0.exactly.count", 33, "<= 32"),
    ("spec.devices.requests.0.exactly.allocationMode", "Some", "expected ExactCount or All"),
    ("spec.devices.requests.0.exactly.deviceClassName", KeyError, "spec.devices.requests[0].exactly.deviceClassName: required"),
    ("spec.devices.requests.0.exactly.selectors.0.cel.expression", "", "expected a non-empty CEL expression"),
    ("spec.devices.requests.1.name", "gpu", "duplicate request name 'gpu'"),
    ("spec.devices.requests.1.firstAvailable.1.adminAccess", True, "firstAvailable[1].adminAccess: unknown field"),
    ("spec.devices.constraints.0.requests.1", "nic/medium", "unknown request 'nic/medium'"),
    ("spec.devices.constraints.0.matchAttribute", "numa", "must be fully qualified"),
    ("spec.devices.constraints.0.distinctAttribute", "gpu.example.com/numa", "exactly one of matchAttribute or distinctAttribute"),
    ("metadata.namespace", "Bad NS", "metadata.namespace: 'Bad NS' is not a valid namespace"),
])
def test_bad_claims_name_the_field(path: str, value: object, message: str) -> None:
    with pytest.raises(ValueError) as e:
        check_claim(_set(CLAIM, path, value))
    assert message in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_bad_classes_and_missing_names() -> None:
    with pytest.raises(DraError, match=r"^DeviceClass gpu.example.com: spec.selectors\[0\].cel.expresion: unknown field"):
        check_class(_set(CLASS, "spec.selectors.0.cel", {"expresion": "true"}))
    with pytest.raises(DraError, match=r"^DeviceClass: metadata.name: required$"):
        check_class({"spec": {}})
    with pytest.raises(DraError, match=r"apiVersion: expected 'resource.k8s.io/v1', got 'resource.k8s.io/v1beta1'"):
        check_class({**CLASS, "apiVersion": "resource.k8s.io/v1beta1"})


def test_claim_templates_stamp_claims() -> None:
    template = {"metadata": {"name": "t", "namespace": "ml"}, "spec": {"spec": CLAIM["spec"]}}
    check_claim_template(template)
    claim = claim_from_template(template, "pod-0-gpu")
    assert claim["metadata"] == {"name": "pod-0-gpu", "namespace": "ml"}
    assert claim["spec"] == CLAIM["spec"] and claim["spec"] is not CLAIM["spec"]
    with pytest.raises(DraError, match=r"ResourceClaimTemplate ml/t: spec.spec.devices.requests\[0\].exactly.count"):
        check_claim_template(_set(template, "spec.spec.devices.requests.0.exactly.count", -1))
