"""Start-up cost: `import gpufleet`, `gpufleet --help` and a whole `gpufleet simulate` process on
Tiresias's 60-job trace, each against `python -c pass` measured in the same run (median of N runs
of each, interleaved so that machine noise hits every command alike).

    .venv/bin/python benchmarks/startup.py [--runs 15]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = (ROOT / ".." / "shared" / "data" / "tiresias").resolve()
GPUFLEET = [sys.executable, "-m", "gpufleet"]


def commands() -> dict[str, list[str]]:
    out = {
        "python -c pass (baseline)": [sys.executable, "-c", "pass"],
        "import gpufleet": [sys.executable, "-c", "import gpufleet"],
        "gpufleet --help": [*GPUFLEET, "--help"],
    }
    if (TRACE / "60_job.csv").exists():
        out["gpufleet simulate 60_job.csv (dlas-gpu)"] = [
            *GPUFLEET, "simulate", "--format", "tiresias", "--trace", str(TRACE / "60_job.csv"),
            "--cluster", str(TRACE / "cluster_spec.csv"), "--policy", "dlas-gpu"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    cmds = commands()
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, argv in cmds.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(next(iter(times.values())))
    print(f"| command | median wall (ms) | over the baseline (ms) |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m * 1e3:.0f} | {(m - base) * 1e3:.0f} |")


if __name__ == "__main__":
    main()
