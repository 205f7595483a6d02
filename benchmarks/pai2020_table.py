"""The Alibaba PAI-2020 simulator's README table (Weng et al., NSDI 2022; github.com/alibaba/clusterdata,
cluster-trace-gpu-v2020/simulator) measured by gpufleet.pai2020 beside the published figures: average
JCT, waiting time and makespan of SJF, SJU, SJG, SJGG and FIFO on 20,000 jobs drawn with seed 42 from
pai_job_duration_estimate_100K.csv, 1,000 arriving per minute, one node of 6,500 GPUs. Each row also
gives the experiment's CPU time.

The trace is not shipped here (12.7 MB, no licence to redistribute it). Get it from the simulator's
folder, for example

    git clone --depth 1 https://github.com/alibaba/clusterdata
    python benchmarks/pai2020_table.py clusterdata/cluster-trace-gpu-v2020/simulator/traces/pai/pai_job_duration_estimate_100K.csv

The same table through the sweep (PUBLISHED and DIFF columns):

    gpufleet sweep --trace PATH/pai_job_duration_estimate_100K.csv --policy sjf sju sjg sjgg fifo \\
        --seed 42 --metric avg_jct avg_queueing_delay makespan
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gpufleet.pai2020 import readme_table
from gpufleet.traces import load_pai2020_jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path, help="pai_job_duration_estimate_100K.csv")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    args = parser.parse_args()
    began = time.process_time()
    jobs = load_pai2020_jobs(args.trace)
    print(f"read {len(jobs):,} jobs in {time.process_time() - began:.2f} s of CPU")
    table = readme_table(jobs)
    print("| policy | metric | published | measured | difference | CPU of the experiment |")
    print("|---|---|---:|---:|---:|---:|")
    for r in table.itertuples():
        print(f"| {r.policy.upper()} | {r.metric} | {r.published:,.2f} | {r.measured:,.2f} | "
              f"{r.difference:+.3%} | {r.cpu_s:.2f} s |")
    worst = table["difference"].abs().max()
    print(f"\nlargest difference {worst:.3%}; slowest experiment {table['cpu_s'].max():.2f} s of CPU")
    if args.json:
        args.json.write_text(json.dumps(table.to_dict("records"), indent=1))


if __name__ == "__main__":
    main()
