"""`import gpufleet`, the CLI's help and a short `gpufleet simulate` printing a summary load no
heavy library: they are imported on first use, where a command needs them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

JOBS = Path(__file__).resolve().parent / "data" / "tiresias_parity" / "jobs40.csv"

HEAVY = ("pandas", "numpy", "matplotlib", "grpc", "starlette", "uvicorn", "kubernetes")


def _loaded_after(code: str, names: tuple[str, ...] = HEAVY) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in {names!r} if m in sys.modules)))"
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


def test_a_summary_of_a_tiresias_trace_loads_no_heavy_library(tmp_path):
    """The command line's trace reader, the native run and the summary, as `gpufleet simulate`
    runs them on a Tiresias job list and cluster file; `-o wide` (a row per job, from a frame)
    loads pandas, and with it NumPy."""
    cluster = tmp_path / "cluster.csv"
    cluster.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,4,4,32,128\n")
    argv = ["simulate", "--format", "tiresias", "--trace", str(JOBS), "--cluster", str(cluster),
            "--policy", "dlas-gpu"]
    code = ("import contextlib, io\nfrom gpufleet.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert main({argv!r}) == 0\n"
            "assert 'avg_jct' in out.getvalue() and 'finish_time_fairness' in out.getvalue()\n")
    assert _loaded_after(code) == set()
    assert _loaded_after(code.replace("'dlas-gpu'", "'dlas-gpu', '-o', 'wide'")) >= {"pandas", "numpy"}


def test_the_sweep_subpackage_loads_on_first_use_and_its_name_stays_the_function():
    sweep = ("gpufleet.sweep",)
    assert _loaded_after("import gpufleet", sweep) == set()
    for first_use in ("gpufleet.sweep", "gpufleet.SweepError", "__import__('gpufleet.sweep.driver')"):
        code = (f"import gpufleet\n{first_use}\n"
                "assert callable(gpufleet.sweep) and gpufleet.sweep.__module__ == 'gpufleet.sweep.driver'")
        assert _loaded_after(code, sweep) == {"gpufleet.sweep"}, first_use
