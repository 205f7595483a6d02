"""Helpers for the real-GPU checks (test_real_gpu.py): detecting a GPU, reading nvidia-smi, comparing
it with `gpufleet node inventory`, and the small programs run on the GPU.

Everything here that does not touch a GPU is unit-tested in test_gpu_checks.py, so a parsing or
comparison mistake shows up in CI rather than on the first (rare) run on a GPU machine.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gpufleet.k8s.annotations import parse_quantity
from gpufleet.node.inventory import normalize_model

SMI_QUERY = ["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,pci.bus_id",
             "--format=csv,noheader,nounits"]
NO_GPU = "no NVIDIA GPU here: {why} (see docs/gpu-verification.md)"
MIB = 1 << 20


def gpu_absent_reason(which: Callable[[str], str | None] = shutil.which,
                      run: Callable[..., Any] = subprocess.run) -> str | None:
    """None when nvidia-smi lists at least one GPU, else why the real-GPU checks cannot run."""
    if not which("nvidia-smi"):
        return NO_GPU.format(why="nvidia-smi not found on PATH")
    try:
        res = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return NO_GPU.format(why=f"`nvidia-smi -L` failed ({e})")
    if res.returncode != 0:
        first = (res.stdout + res.stderr).strip().splitlines()[:1]
        return NO_GPU.format(why=f"`nvidia-smi -L` exited {res.returncode}"
                             + (f": {first[0]}" if first else ""))
    if not any(line.startswith("GPU ") for line in res.stdout.splitlines()):
        return NO_GPU.format(why="`nvidia-smi -L` lists no GPU")
    return None


def has_gpu() -> bool:
    return gpu_absent_reason() is None


@dataclass(frozen=True)
class SmiGpu:
    index: int
    uuid: str
    name: str
    memory_mib: int
    bus_id: str


def parse_smi_csv(text: str) -> list[SmiGpu]:
    """Rows of `nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv,
    noheader,nounits`. The name is taken as everything between uuid and memory, so a name with a
    comma cannot shift the other columns."""
    gpus = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 5:
            raise ValueError(f"nvidia-smi line {n}: expected 5 columns, got {len(cols)}: {line!r}")
        index, uuid, *name, memory, bus = cols
        try:
            gpus.append(SmiGpu(int(index), uuid, ", ".join(name), int(float(memory)), bus))
        except ValueError as e:
            raise ValueError(f"nvidia-smi line {n}: {e}: {line!r}") from None
    return gpus


def canonical_bus_id(bus_id: str) -> str:
    """"00000000:18:00.0" (nvidia-smi) and "0000:18:00.0" (sysfs, our inventory) -> "0000:18:00.0".
    The domain is a number, so its width and case do not matter."""
    s = bus_id.strip().lower()
    dom, sep, rest = s.partition(":")
    if not sep or not rest:
        raise ValueError(f"not a PCI bus id: {bus_id!r}")
    return f"{int(dom, 16):04x}:{rest}"


def compare_inventory(inventory: Mapping[str, Any], smi: Sequence[SmiGpu],
                      memory_tolerance: float = 0.01) -> list[str]:
    """Differences between `gpufleet node inventory --json` and nvidia-smi (empty when they agree).
    GPUs are matched by UUID: NVML minors need not equal nvidia-smi's indices."""
    problems: list[str] = []
    devices = [d for d in inventory.get("devices", []) if d.get("type", "gpu") == "gpu"]
    if len(devices) != len(smi):
        problems.append(f"inventory has {len(devices)} GPUs, nvidia-smi lists {len(smi)}")
    by_uuid = {d.get("id"): d for d in devices}
    for g in smi:
        d = by_uuid.get(g.uuid)
        if d is None:
            problems.append(f"GPU {g.index} ({g.uuid}) is missing from the inventory "
                            f"(inventory ids: {sorted(str(k) for k in by_uuid)})")
            continue
        mem = (d.get("resources") or {}).get("koordinator.sh/gpu-memory")
        if mem is None:
            problems.append(f"GPU {g.index}: inventory has no gpu-memory")
        else:
            got_mib = parse_quantity(str(mem)) / MIB
            if abs(got_mib - g.memory_mib) > memory_tolerance * g.memory_mib:
                problems.append(f"GPU {g.index}: inventory memory {mem} ({got_mib:.0f} MiB) vs "
                                f"nvidia-smi {g.memory_mib} MiB (more than {memory_tolerance:.0%} apart)")
        bus = (d.get("topology") or {}).get("busID")
        try:
            same_bus = bus is not None and canonical_bus_id(str(bus)) == canonical_bus_id(g.bus_id)
        except ValueError:
            same_bus = False
        if not same_bus:
            problems.append(f"GPU {g.index}: inventory busID {bus!r} vs nvidia-smi {g.bus_id!r}")
        want_model = normalize_model(g.name)
        if d.get("model") != want_model:
            problems.append(f"GPU {g.index}: inventory model {d.get('model')!r} vs "
                            f"{want_model!r} (from nvidia-smi name {g.name!r})")
    return problems


def overlap_seconds(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Length of the common part of two {"start", "end"} wall-clock intervals (0 when disjoint)."""
    return max(0.0, min(a["end"], b["end"]) - max(a["start"], b["start"]))


def last_json_line(text: str, key: str) -> dict[str, Any]:
    """The last line of `text` that is a JSON object containing `key` (a child's report)."""
    import json
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and key in doc:
                return doc
    raise ValueError(f"no JSON report with {key!r} in output:\n{text}")


def node_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for child processes: they import the same gpufleet as this process (the
    checkout's python/ first), whether or not the package is installed."""
    import gpufleet
    env = dict(os.environ)
    pkg_root = str(Path(gpufleet.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def gpufleet_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpufleet", *args]


# --- programs run on the GPU ---------------------------------------------------------------------
# Given 4 GiB under MPS: 2 GiB must fit, 6 GiB more must not. Exit 0 only when the second
# allocation failed with an out-of-memory error; 3 when it succeeded; 4 when even 2 GiB failed.
OOM_MARKER = "GPUFLEET_CHECK_OOM_AS_EXPECTED"
OOM_SCRIPT = f"""
import os, sys, torch
print("CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"))
print("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "<unset>"))
free, total = torch.cuda.mem_get_info()
print(f"mem_get_info: free={{free >> 20}} MiB total={{total >> 20}} MiB")
def is_oom(e):
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()
try:
    a = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
except RuntimeError as e:
    print("2 GiB within a 4 GiB limit failed:", str(e).splitlines()[0])
    sys.exit(4)
print("allocated 2 GiB: ok")
try:
    b = torch.empty(6 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
except RuntimeError as e:
    if not is_oom(e):
        raise
    print("{OOM_MARKER}:", str(e).splitlines()[0])
    sys.exit(0)
print("GPUFLEET_CHECK_NO_OOM: allocated 6 GiB more despite the 4 GiB limit")
sys.exit(3)
"""

# A compute-bound half-precision matmul loop. argv: seconds [barrier_dir name peers]. With a
# barrier, each process marks itself ready after CUDA is up and waits for its peers, so the timed
# windows of concurrent processes overlap by construction rather than by luck of start-up times.
MATMUL_SCRIPT = """
import json, os, pathlib, sys, time, torch
seconds = float(sys.argv[1])
dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
a = torch.randn(8192, 8192, device="cuda", dtype=dtype)
b = torch.randn(8192, 8192, device="cuda", dtype=dtype)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
if len(sys.argv) > 2:
    barrier, name, peers = pathlib.Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    (barrier / name).touch()
    deadline = time.time() + 120
    while len(list(barrier.iterdir())) < peers:
        if time.time() > deadline:
            sys.exit("barrier: peers never became ready")
        time.sleep(0.01)
start, t0, n = time.time(), time.perf_counter(), 0
while time.perf_counter() - t0 < seconds:
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    n += 10
elapsed = time.perf_counter() - t0
free, total = torch.cuda.mem_get_info()
print(json.dumps({"start": start, "end": time.time(), "iterations": n, "iters_per_s": n / elapsed,
                  "thread_percentage": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
                  "pinned_mem_limit": os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
                  "mem_free_mib": free >> 20, "mem_total_mib": total >> 20, "dtype": str(dtype)}))
"""


def profile_script(size: int, matmuls: int = 1) -> str:
    """A `gpufleet node profile` script: `matmuls` products of two size x size matrices per step."""
    return (
        "import torch\n"
        "dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
        "def setup():\n"
        "    global a, b\n"
        f"    a = torch.randn({size}, {size}, device='cuda', dtype=dtype)\n"
        f"    b = torch.randn({size}, {size}, device='cuda', dtype=dtype)\n"
        "def step():\n"
        f"    for _ in range({matmuls}):\n"
        "        a @ b\n"
    )
