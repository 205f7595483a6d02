"""The worked examples of docs/dra.md (examples/dra/*.yaml) give the answers the document states,
and DRA scenario files are read strictly."""
from __future__ import annotations

import copy

import pytest
from conftest import ROOT

from gpufleet.documents import ScenarioError
from gpufleet.dra.scenario import build_dra_scenario, load_dra_scenario

EXAMPLES = ROOT / "examples" / "dra"


def _devices(outcome, claim: int = 0) -> list[str]:
    return [r["device"] for r in outcome.results[claim]["devices"]["results"]]


def test_whole_gpu_by_product_name() -> None:
    out = load_dra_scenario(EXAMPLES / "whole-gpu.yaml").allocate()
    assert out.ok and _devices(out) == ["gpu-1"]
    assert out.results[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-1"]


def test_mig_partitions_pack_onto_the_open_gpu() -> None:
    s = load_dra_scenario(EXAMPLES / "mig-partitions.yaml")
    packed = s.allocate("pack")
    first = s.allocate("first")
    assert packed.ok and first.ok
    assert {d for i in range(6) for d in _devices(packed, i)} == {f"gpu-0-mig-{k}" for k in range(1, 7)}
    assert packed.score["opened"] == 0  # gpu-1 stays whole
    assert {_devices(first, i)[0].rsplit("-mig", 1)[0] for i in range(6)} == {"gpu-1"}
    # Seven more do not fit on gpu-0 (its counters allow six): gpu-1 is opened, once.
    s.claims.append(copy.deepcopy(s.claims[-1]))
    s.claims[-1]["metadata"]["name"] = "job-6"
    out = s.allocate("pack")
    assert out.ok and out.score["opened"] == 1
    on_gpu0 = sum(d.startswith("gpu-0") for i in range(7) for d in _devices(out, i))
    assert on_gpu0 <= 6


def test_shared_gpu_by_capacity() -> None:
    out = load_dra_scenario(EXAMPLES / "shared-gpu.yaml").allocate()
    assert out.ok and _devices(out, 0) == _devices(out, 1) == ["gpu-0"]
    a, b = (r["devices"]["results"][0] for r in out.results)
    assert a["consumedCapacity"] == {"memory": "12Gi", "cores": "30"}  # 10Gi rounds up to 12Gi
    assert b["consumedCapacity"] == {"memory": "20Gi", "cores": "10"}
    assert a["shareID"] != b["shareID"]
    s = load_dra_scenario(EXAMPLES / "shared-gpu.yaml")
    s.claims[1]["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"] = "30Gi"
    assert s.allocate().verdict == "unallocatable"  # 12Gi + 32Gi > 40Gi


def test_gpu_and_nic_on_one_pcie_root() -> None:
    out = load_dra_scenario(EXAMPLES / "gpu-nic.yaml").allocate()
    assert out.ok and _devices(out) == ["gpu-1", "nic-0"]


def test_scenario_files_are_strict() -> None:
    with pytest.raises(ScenarioError, match=r"^<x>: unknown field \"slice\"; did you mean \"slices\"\?$"):
        build_dra_scenario({"node": {"metadata": {"name": "n"}}, "slice": []}, "<x>")
    with pytest.raises(ScenarioError, match=r"^<x>: claims: ResourceClaim default/c: spec.devices.requests\[0\].exactly.count"):
        build_dra_scenario({"node": {"metadata": {"name": "n"}}, "claims": [
            {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "x", "count": "2"}}]}}}]}, "<x>")
