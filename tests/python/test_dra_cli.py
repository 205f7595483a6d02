"""`gpufleet place` on a DRA scenario prints each claim's devices (table, wide, JSON), with the
strategies pack and first, and refuses unknown strategies and bad files on one line."""
from __future__ import annotations

import json

from conftest import ROOT

from gpufleet.cli import main

EXAMPLES = ROOT / "examples" / "dra"


def test_place_prints_the_claims_devices(capsys) -> None:
    assert main(["place", str(EXAMPLES / "mig-partitions.yaml")]) == 0
    out = capsys.readouterr().out
    assert "default/job-0  mig      gpu.nvidia.com/node-1/gpu-0-mig-1  node-1" in out
    assert "allocated (score: 0 roots, 0 opened" in out
    assert main(["place", str(EXAMPLES / "shared-gpu.yaml"), "-o", "wide"]) == 0
    assert "memory=12Gi,cores=30" in capsys.readouterr().out


def test_place_json_carries_the_allocation_results(capsys) -> None:
    assert main(["place", str(EXAMPLES / "mig-partitions.yaml"), "--strategy", "first", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["strategy"] == "first" and doc["verdict"] == "allocated" and doc["score"]["opened"] == 1
    first = doc["claims"][0]["allocation"]["devices"]["results"][0]
    assert first == {"request": "mig", "driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-1-mig-0"}


def test_place_refuses_bad_input(capsys, tmp_path) -> None:
    assert main(["place", str(EXAMPLES / "gpu-nic.yaml"), "--strategy", "spread"]) == 2
    assert "unknown strategy 'spread' for a DRA scenario" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("node: {metadata: {name: n}}\nclaims:\n  - metadata: {name: c}\n    spec: {devices: {requests: [{name: r}]}}\n")
    assert main(["place", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.endswith("claims: ResourceClaim default/c: spec.devices.requests[0]: exactly one of exactly or firstAvailable must be set")
    assert "\n" not in err
