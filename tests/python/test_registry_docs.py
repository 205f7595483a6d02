"""The registry tables in the docs are generated from the registrations: the committed files are
what tools/make_registry_docs.py writes now."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.registry_docs import render

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted(render(ROOT)), ids=lambda p: p.name)
def test_generated_docs_are_current(path: Path):
    assert path.read_text() == render(ROOT)[path], (
        f"{path.relative_to(ROOT)} is out of date: run tools/make_registry_docs.py")


def test_every_registrant_and_callback_point_is_documented():
    from gpufleet import registries
    page = (ROOT / "docs" / "registries.md").read_text()
    for kind in registries.KINDS:
        for e in registries.entries(kind):
            if not e["open_parameters"]:  # plugins written in Python at run time are not built in
                assert f"| `{e['name']}` |" in page, (kind, e["name"])
    engine = (ROOT / "docs" / "engine.md").read_text()
    for point in registries.callback_points():
        assert f"| `{point['name']}` |" in engine, point["name"]


def test_a_missing_section_marker_is_an_error(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "engine.md").write_text("# Engine\n")
    with pytest.raises(ValueError, match="no generated section 'callback-points'"):
        render(tmp_path)
