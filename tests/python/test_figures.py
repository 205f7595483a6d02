"""scripts/make_figures.py draws every README figure, and the README shows each figure it ships."""
from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

from conftest import SHARED_DATA, missing_shared_data

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_figures.py"
FIGURES = ROOT / "docs" / "figures"
EXPECTED = ("policy_jct.png", "openb_alloc.png")
MAX_BYTES = 150 * 1024  # figures are committed: keep them small


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; asserts the signature."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_script_draws_every_figure(tmp_path):
    for rel in ("gavel/msr/0e4a51.trace", "gavel/simulation_throughputs.json",
                "openb/openb_node_list_gpu_node.csv", "openb/openb_pod_list_default.csv"):
        if not (SHARED_DATA / rel).is_file():
            missing_shared_data(SHARED_DATA / rel)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--data", str(SHARED_DATA)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stderr
    for name in EXPECTED:
        path = tmp_path / name
        assert path.is_file(), f"{name} not written; stdout: {proc.stdout}"
        width, height = _png_size(path)
        assert 600 <= width <= 1600 and 300 <= height <= 900, (name, width, height)
        assert 10_000 < path.stat().st_size < MAX_BYTES, (name, path.stat().st_size)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(EXPECTED)


def test_missing_trace_is_named(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--data", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 2
    assert str(tmp_path / "none" / "gavel") in proc.stderr and "not found" in proc.stderr


def test_readme_shows_every_shipped_figure():
    readme = (ROOT / "README.md").read_text()
    shown = set(re.findall(r"!\[[^\]]*\]\((docs/figures/[^)\s]+\.png)\)", readme))
    shipped = {f"docs/figures/{p.name}" for p in FIGURES.glob("*.png")}
    assert {f"docs/figures/{n}" for n in EXPECTED} <= shipped, "run scripts/make_figures.py"
    assert shipped <= shown, f"figures not shown in README.md: {sorted(shipped - shown)}"
    assert shown <= shipped, f"README.md shows missing figures: {sorted(shown - shipped)}"
    assert "scripts/make_figures.py" in readme
    for path in shipped:
        width, _ = _png_size(ROOT / path)
        assert (ROOT / path).stat().st_size < MAX_BYTES and width <= 1600, path
