"""Upper bounds on trace values (docs/traces.md, "What a loader refuses").

Every loader checks its numbers against these before they reach pandas (int64 columns) or the
native simulator and replay (int32 GPU counts and shares, int64 CPU and memory, float64
seconds). The bounds are far above any real cluster, so they only reject junk: a value that
would overflow a native field, or lose precision, or make a simulated clock meaningless.
"""
from __future__ import annotations

INT64_MAX = (1 << 63) - 1

# GPUs of one job, pod or node. The native core counts GPUs in int32; 2**20 is a million
# GPUs, more than any cluster, and keeps sums over a few thousand rows inside int32 too.
MAX_GPUS = 1 << 20

# Seconds: submit, creation, deletion and arrival times, durations, intervals. 10**10 s is
# about 317 years: it admits Unix timestamps and keeps float64 sums exact to the millisecond.
MAX_SECONDS = 1e10

# Iterations or steps of one job. float64 represents every integer up to 2**53 exactly, and
# durations are computed as steps / throughput.
MAX_COUNT = 1 << 53

# Throughputs (steps/s) and priority weights.
MAX_RATE = 1e9

# openb CPU requests and capacities, thousandths of a core: 2**30 is a million cores.
MAX_CPU_MILLI = 1 << 30

# openb memory, MiB: 2**26 MiB is 64 TiB. The replay converts to bytes (x 2**20) in int64,
# so a bound is needed, and 2**46 bytes per row leaves room for sums over many rows.
MAX_MEMORY_MIB = 1 << 26

# Bytes of one trace file: loaders read a file whole (its text, then its records), so a bound
# keeps a mistaken path (a disk image, an endless file) from taking all memory. 1 GiB is a few
# million records in any format, far past the public traces (about a megabyte each).
MAX_TRACE_BYTES = 1 << 30

__all__ = ["INT64_MAX", "MAX_COUNT", "MAX_CPU_MILLI", "MAX_GPUS", "MAX_MEMORY_MIB", "MAX_RATE",
           "MAX_SECONDS", "MAX_TRACE_BYTES"]
