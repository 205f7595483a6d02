"""The Kubernetes manifests, the Containerfile and the package agree: one image, named with the
package's version, whose entrypoint is the gpufleet CLI and whose containers run real commands."""
from __future__ import annotations

import re
import warnings
import tomllib
from pathlib import Path

import yaml

import gpufleet
from gpufleet.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
IMAGE_REPO = "ghcr.io/gpufleet/gpufleet"


def _containers() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "examples" / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
            out += [(path.name, c) for c in spec.get("containers", [])]
    return out


def _subcommands() -> set[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return set(action.choices)


def test_every_manifest_runs_the_one_image_of_this_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version == gpufleet.__version__
    containers = _containers()
    assert {name for name, _ in containers} == {"extender-deployment.yaml",
                                                "deviceplugin-daemonset.yaml"}
    assert {c["image"] for _, c in containers} == {f"{IMAGE_REPO}:{version}"}
    text = (ROOT / "Containerfile").read_text()
    assert f'org.opencontainers.image.version="{version}"' in text
    assert f"-t {IMAGE_REPO}:{version}" in text


def test_containers_run_gpufleet_commands_through_the_entrypoint():
    text = (ROOT / "Containerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["gpufleet"\]$', text, flags=re.M)
    assert "scripts/setup.sh" in text
    commands = _subcommands()
    for name, c in _containers():
        assert "command" not in c, f"{name}: the image's entrypoint is the gpufleet CLI"
        assert c["args"][0] in commands, f"{name}: {c['args'][0]} is not a gpufleet command"
        build_parser().parse_args(c["args"])  # the arguments parse as the CLI reads them


def test_probes_use_paths_the_extender_serves():
    from gpufleet.k8s.extender.app import create_app
    from gpufleet.k8s.extender.state import ExtenderState

    with warnings.catch_warnings():  # starlette >= 1.x nudges towards httpx2; httpx works
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    client = TestClient(create_app(ExtenderState()))
    probed = 0
    for name, c in _containers():
        for probe in ("readinessProbe", "livenessProbe"):
            if probe in c and c["args"][0] == "extender":
                r = client.get(c[probe]["httpGet"]["path"])
                assert r.status_code == 200, f"{name}: {probe} {c[probe]['httpGet']['path']}: {r.status_code}"
                probed += 1
    assert probed >= 2, "the extender's manifest has a readiness and a liveness probe"


def test_dependency_floors_are_the_tested_minimum_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {}
    for req in project["dependencies"] + [r for deps in project["optional-dependencies"].values()
                                          for r in deps]:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([^,;\s]+)", req)
        if m:
            floors[m.group(1).lower()] = m.group(2)
    pins = {}
    for line in (ROOT / "tests" / "min-versions.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    assert pins and all(floors.get(name) == version for name, version in pins.items()), \
        {n: (floors.get(n), v) for n, v in pins.items() if floors.get(n) != v}
