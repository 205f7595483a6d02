"""A small trace in the PAI-2020 simulator's format, written by the tests (the real 100K-job file is
not in CI): fractional and zero GPUs, CPU-bound jobs, gangs, ties in every sort key, durations of 0 and
under a second, half-second submit times (rounded half to even) and a job wider than the cluster.
tests/python/data/pai2020_reference.json holds the PAI simulator's own figures on it."""
from __future__ import annotations

import csv
import random
from pathlib import Path

HEADER = ["job_id", "user", "gpu_type", "num_inst", "num_cpu", "num_gpu", "submit_time", "duration",
          "user_dur", "user_gpu_dur", "group_dur", "group_gpu_dur"]


def pai_rows(num_rows: int = 800, seed: int = 7, wide_job: bool = True) -> list[dict[str, str]]:
    """Rows of the test trace; a pure function of its arguments (Python's Mersenne Twister).
    ``wide_job=False`` leaves out the job wider than the cluster (on nodes of 8 GPUs it never fits)."""
    rng = random.Random(seed)
    ids = rng.sample(range(100, 100 + 4 * num_rows), num_rows)
    rows = []
    for k in range(num_rows):
        inst = rng.choice([1, 1, 1, 1, 2, 4])
        gpu = rng.choice([0, 0.25, 0.5, 1, 1, 2, 4]) if inst > 1 else rng.choice([0, 0.25, 0.5, 1, 1, 2, 4, 8])
        if k == 17 and wide_job:
            gpu, inst = 100, 1                          # wider than the cluster: cut to its size
        duration = rng.choice([0, 0.4, 1]) if k % 97 == 5 else round(rng.paretovariate(1.1) * 120, 1)
        submit = rng.randrange(0, 20000, 5) / (2 if k % 3 else 1)
        user = f"u{rng.randrange(12)}"
        rows.append({
            "job_id": str(ids[k]), "user": user, "gpu_type": rng.choice(["V100", "P100", "T4", "MISC", ""]),
            "num_inst": str(inst), "num_cpu": str(rng.choice([0.5, 2, 4, 6, 12, 40, 60])), "num_gpu": str(gpu),
            "submit_time": f"{submit:g}", "duration": f"{min(duration, 90000):g}",
            "user_dur": f"{round(duration * rng.uniform(0.3, 3), -1):g}",
            "user_gpu_dur": f"{round(duration * rng.uniform(0.3, 3), -1):g}",
            "group_dur": f"{round(duration * rng.uniform(0.5, 2), -1):g}",
            "group_gpu_dur": f"{round(duration * rng.uniform(0.7, 1.5), -1):g}",
        })
    return rows


def write_pai_trace(path: Path, num_rows: int = 800, seed: int = 7, wide_job: bool = True) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, HEADER)
        writer.writeheader()
        writer.writerows(pai_rows(num_rows, seed, wide_job))
    return path


if __name__ == "__main__":  # writes a trace the reference figures were recorded on
    import argparse
    parser = argparse.ArgumentParser(description="write the PAI-2020 test trace")
    parser.add_argument("path", type=Path)
    parser.add_argument("--rows", type=int, default=800)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-wide-job", action="store_true")
    args = parser.parse_args()
    print(write_pai_trace(args.path, args.rows, args.seed, wide_job=not args.no_wide_job))
