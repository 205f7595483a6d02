"""Start-up cost: `import gpufleet`, `gpufleet --help` and a whole `gpufleet simulate` process on
Tiresias's 60-job trace, each against `python -c pass` measured in the same run (median of N runs
of each, interleaved so that machine noise hits every command alike), and beside them Tiresias's
own simulator on the same trace and cluster when its folder is given.

    .venv/bin/python benchmarks/startup.py [--runs 15] [--tiresias DIR [--tiresias-python PY]]

DIR is the simulator/ folder of a SymbioticLab/Tiresias checkout, run as its sim_runs.sh does
(`run_sim.py --scheme=count --schedule=dlas-gpu ...`) by PY, a Python 2.7 with NumPy (the
simulator is Python 2 code); without DIR the output says that Tiresias's simulator was not measured.

Every command runs once untimed first, with byte code cached in a temporary folder
(PYTHONPYCACHEPREFIX, and PYTHONDONTWRITEBYTECODE cleared): an installed package has its .pyc
files, and a start-up figure that recompiled every module would measure the compiler. The
simulate row also reports which of pandas and NumPy the process imported (neither, it should:
the command line reads the trace into plain columns and computes the summary without them).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = (ROOT / ".." / "shared" / "data" / "tiresias").resolve()
GPUFLEET = [sys.executable, "-m", "gpufleet"]


def commands(tiresias: Path | None, python2: str, logs: str) -> dict[str, list[str]]:
    out = {
        "python -c pass (baseline)": [sys.executable, "-c", "pass"],
        "import gpufleet": [sys.executable, "-c", "import gpufleet"],
        "gpufleet --help": [*GPUFLEET, "--help"],
    }
    if (TRACE / "60_job.csv").exists():
        out["gpufleet simulate 60_job.csv (dlas-gpu)"] = [
            *GPUFLEET, "simulate", "--format", "tiresias", "--trace", str(TRACE / "60_job.csv"),
            "--cluster", str(TRACE / "cluster_spec.csv"), "--policy", "dlas-gpu"]
    if tiresias is not None:
        out["Tiresias run_sim.py 60_job.csv (dlas-gpu)"] = [
            python2, str(tiresias / "run_sim.py"), "--cluster_spec=cluster_spec.csv", "--print",
            "--scheme=count", "--trace_file=60_job.csv", "--schedule=dlas-gpu", f"--log_path={logs}"]
    return out


HEAVY = ("pandas", "numpy")


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    """Which of HEAVY the process imports (from its -X importtime report)."""
    res = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, check=True,
                         env=env)
    return [name for name in HEAVY if any(line.rstrip().endswith(f" {name}") for line in res.stderr.splitlines())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tiresias", type=Path, metavar="DIR",
                        help="the simulator/ folder of a Tiresias checkout, to time its run_sim.py")
    parser.add_argument("--tiresias-python", default="python2.7", metavar="PY",
                        help="the Python 2.7 (with NumPy) that runs it (default %(default)s)")
    args = parser.parse_args()
    tiresias = args.tiresias.resolve() if args.tiresias else None
    if tiresias is not None and not (tiresias / "run_sim.py").is_file():
        parser.error(f"--tiresias {args.tiresias}: no run_sim.py there (give Tiresias's simulator/ folder)")
    with tempfile.TemporaryDirectory() as logs, tempfile.TemporaryDirectory() as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        cmds = commands(tiresias, args.tiresias_python, logs)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for run in range(args.runs + 1):   # the first round writes the byte code and is not counted
            for name, argv in cmds.items():
                start = time.perf_counter()
                subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=tiresias if name.startswith("Tiresias") else None, env=env)
                if run:
                    times[name].append(time.perf_counter() - start)
        simulate = next((argv for name, argv in cmds.items() if name.startswith("gpufleet simulate")), None)
        heavy = heavy_imports(simulate, env) if simulate is not None else []
    base = statistics.median(next(iter(times.values())))
    print("| command | median wall (ms) | over the baseline (ms) |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m * 1e3:.0f} | {(m - base) * 1e3:.0f} |")
    if simulate is None:
        print(f"\nno simulate row: {TRACE / '60_job.csv'} is not there")
    else:
        print(f"\ngpufleet simulate imports {', '.join(heavy) if heavy else 'neither pandas nor NumPy'}")
    if tiresias is None:
        print("Tiresias's simulator: not measured (not available here; give --tiresias DIR, the "
              "simulator/ folder of a SymbioticLab/Tiresias checkout)")


if __name__ == "__main__":
    main()
