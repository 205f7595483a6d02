"""What a durable bind record costs: scenario mode's journal appends, each durable (and, from
journal version 2, covered by the fsynced high-water mark) before it returns.

  alone     one append at a time: the median latency, i.e. a bind's added time on an idle extender
  shared    T threads appending at once, sharing syncs (group commit): appends per second

The figure depends on the disk's flush latency, not on CPU, so run it on the disk the journal will
live on (--dir), and compare trees in the same run, alternating, since a shared disk is noisy:

    python benchmarks/extender_journal.py --dir /var/tmp --runs 5 --compare /path/to/old/python

--compare runs the same measurement on another source tree (for example a worktree of an older
commit) in a child process after each run of this one.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def measure(directory: str, alone_n: int, threads: int, per_thread: int) -> dict[str, float]:
    from gpufleet.k8s.extender import journal as jr
    from gpufleet.k8s.extender.convert import PodArgs

    ann = {"scheduling.koordinator.sh/device-allocated": '{"gpu":[{"minor":0}]}'}

    def pod(name: str) -> PodArgs:
        return PodArgs(name=f"default/{name}", namespace="default", pod_name=name, uid=name,
                       requests={"nvidia.com/gpu": "1"})

    j = jr.Journal.open(Path(tempfile.mkdtemp(dir=directory)) / "s.journal")
    lat = []
    for i in range(alone_n):
        t0 = time.perf_counter()
        j.record_bind(pod(f"a{i}"), "n1", ann)
        lat.append(time.perf_counter() - t0)
    j.close()

    j = jr.Journal.open(Path(tempfile.mkdtemp(dir=directory)) / "s.journal")

    def work(t: int) -> None:
        for i in range(per_thread):
            j.record_bind(pod(f"s{t}-{i}"), "n1", ann)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rate = threads * per_thread / (time.perf_counter() - t0)
    j.close()
    return {"version": jr.VERSION, "alone_ms": 1e3 * statistics.median(lat), "shared_per_s": rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the journals are written")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--alone", type=int, default=200, help="appends measured one at a time")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--per-thread", type=int, default=50)
    ap.add_argument("--compare", metavar="PYTHON_TREE", help="another tree's python/ folder")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)   # child mode
    args = ap.parse_args()
    if args.json:
        print(json.dumps(measure(args.dir, args.alone, args.threads, args.per_thread)))
        return
    results: dict[str, list[dict[str, float]]] = {"this": [], "compare": []}
    for _ in range(args.runs):
        results["this"].append(measure(args.dir, args.alone, args.threads, args.per_thread))
        if args.compare:
            # The installed package may come through an editable-install finder: drop it so
            # the other tree's sources are the ones imported.
            argv = [__file__, "--json", "--dir", args.dir, "--alone", str(args.alone),
                    "--threads", str(args.threads), "--per-thread", str(args.per_thread)]
            code = ("import runpy, sys; sys.meta_path[:] = [f for f in sys.meta_path if "
                    f"'editable' not in type(f).__module__]; sys.path.insert(0, {args.compare!r}); "
                    f"sys.argv = {argv!r}; runpy.run_path({__file__!r}, run_name='__main__')")
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True)
            results["compare"].append(json.loads(out.stdout))
    for name, runs in results.items():
        if runs:
            alone = statistics.median(r["alone_ms"] for r in runs)
            shared = statistics.median(r["shared_per_s"] for r in runs)
            print(f"{name}: journal v{runs[0]['version']}: one append alone {alone:.2f} ms "
                  f"(median), {args.threads} threads {shared:.0f} appends/s (median of "
                  f"{len(runs)} runs)")

if __name__ == "__main__":
    main()
