"""`import gpufleet` binds its modules on first use, and a submodule read as an attribute
(`gpufleet.sim.simulate`, as the docs and notebooks write it) still resolves."""
from __future__ import annotations

import subprocess
import sys


def test_submodules_resolve_as_attributes_after_a_plain_import():
    code = (
        "import sys, gpufleet\n"
        "assert 'gpufleet.sim' not in sys.modules\n"
        "for name in ('sim', 'topology', 'queues', 'engine', 'traces'):\n"
        "    module = getattr(gpufleet, name)\n"
        "    assert module is sys.modules['gpufleet.' + name], name\n"
        "assert callable(gpufleet.sim.simulate)\n"
        "try:\n"
        "    gpufleet.no_such_module\n"
        "except AttributeError as e:\n"
        "    assert 'no_such_module' in str(e)\n"
        "else:\n"
        "    raise SystemExit('an unknown name resolved')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
