"""The type stub shipped for the extension names everything the extension exports."""
from __future__ import annotations

import re
from pathlib import Path

import gpufleet
from gpufleet import _core

STUB = Path(gpufleet.__file__).with_name("_core.pyi")


def test_stub_ships_with_the_package():
    assert STUB.is_file()
    assert (STUB.parent / "py.typed").is_file()


def test_stub_lists_every_public_name_of_the_extension():
    text = STUB.read_text()
    declared = set(re.findall(r"^(?:class|def) (\w+)", text, flags=re.M))
    public = {n for n in dir(_core) if not n.startswith("_")}
    missing = public - declared
    assert not missing, f"regenerate the stub with tools/make_stubs.sh; missing: {sorted(missing)}"
