"""`import gpufleet` and the CLI's help load no heavy library: they are imported on first use."""
from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "numpy", "matplotlib", "grpc", "starlette", "uvicorn", "kubernetes")


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_gpufleet_loads_no_heavy_library():
    assert _loaded_after("import gpufleet") == set()


def test_cli_help_loads_no_heavy_library():
    code = ("import contextlib, io\nfrom gpufleet.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert _loaded_after(code) == set()


def test_first_use_loads_what_it_needs():
    code = ("import gpufleet\nfrom gpufleet.engine import Engine\n"
            "e = Engine()\nassert len(e.jobs()) == 0")
    assert "pandas" in _loaded_after(code)
