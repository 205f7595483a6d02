"""The type stubs shipped for the extension (a stub package, one file per area submodule) name
everything each submodule exports, and the package's own stub re-exports every top-level name."""
from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

import gpufleet
from gpufleet import _core

STUBS = Path(gpufleet.__file__).with_name("_core")
AREAS = sorted(n for n, v in vars(_core).items() if isinstance(v, types.ModuleType))


def _public(module: types.ModuleType) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


def test_stubs_ship_with_the_package():
    assert (STUBS / "__init__.pyi").is_file()
    assert (STUBS.parent / "py.typed").is_file()
    assert not STUBS.with_suffix(".pyi").exists(), "a single-file stub would shadow the stub package"
    assert AREAS, "the extension has no area submodules"


@pytest.mark.parametrize("area", AREAS)
def test_each_area_stub_declares_every_public_name(area):
    stub = STUBS / f"{area}.pyi"
    assert stub.is_file(), f"{stub.name} missing; regenerate the stubs with tools/make_stubs.sh"
    declared = set(re.findall(r"^(?:class|def) (\w+)", stub.read_text(), flags=re.M))
    missing = _public(getattr(_core, area)) - declared
    assert not missing, f"regenerate the stubs with tools/make_stubs.sh; {area} lacks {sorted(missing)}"


def test_the_package_stub_reexports_every_top_level_name():
    text = (STUBS / "__init__.pyi").read_text()
    imported = set(re.findall(r"^from gpufleet\._core\.\w+ import (\w+)", text, flags=re.M))
    missing = _public(_core) - imported - set(AREAS)
    assert not missing, f"regenerate the stubs with tools/make_stubs.sh; missing: {sorted(missing)}"
