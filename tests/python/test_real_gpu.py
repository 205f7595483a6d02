"""The node side on a real NVIDIA GPU: inventory vs nvidia-smi, MPS memory and core limits, the
profiler. Run with `bash tools/verify_gpu.sh` (or `pytest -s -v tests/python/test_real_gpu.py`);
every command and what it printed goes to stdout so the log can go into docs/gpu-verification.md.

Without a GPU (CI) the whole module skips with the reason. On a GPU machine a missing tool (torch
with CUDA, nvidia-ml-py, nvidia-cuda-mps-control) fails the check instead of skipping it: these
checks exist to be run there, and a skip would read as a pass.
"""
from __future__ import annotations

import json
import math
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import gpu_checks as gc

_ABSENT = gc.gpu_absent_reason()  # asked once, at collection
pytestmark = pytest.mark.skipif(_ABSENT is not None, reason=_ABSENT or "")

TIMEOUT_S = 300  # per child process; a hung CUDA/MPS call must not hang the run


def run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = TIMEOUT_S,
        label: str = "") -> subprocess.CompletedProcess[str]:
    print(f"\n$ {shlex.join(cmd)}" + (f"    # {label}" if label else ""), flush=True)
    res = subprocess.run(cmd, env=env or gc.node_env(), capture_output=True, text=True, timeout=timeout)
    print(res.stdout, end="")
    if res.stderr:
        print(f"[stderr]\n{res.stderr}", end="")
    print(f"[exit {res.returncode}]", flush=True)
    return res


def need(tool: str) -> None:
    if not shutil.which(tool):
        pytest.fail(f"{tool} not found on PATH; this GPU machine needs the NVIDIA driver utilities")


def need_torch_cuda() -> None:
    res = run([sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda, "
               "torch.cuda.is_available(), torch.cuda.device_count())"], label="torch with CUDA?")
    assert res.returncode == 0 and " True " in res.stdout, \
        "these checks need PyTorch with CUDA in the interpreter that runs pytest"


def smi_gpus() -> list[gc.SmiGpu]:
    res = run(gc.SMI_QUERY)
    assert res.returncode == 0, f"nvidia-smi query failed: {res.stderr}"
    gpus = gc.parse_smi_csv(res.stdout)
    assert gpus, "nvidia-smi listed no GPU"
    return gpus


def inventory() -> dict[str, Any]:
    res = run(gc.gpufleet_cmd("node", "inventory", "--json"))
    assert res.returncode == 0, f"gpufleet node inventory failed (exit {res.returncode}): {res.stderr}"
    return json.loads(res.stdout)


@pytest.fixture
def mps_dirs() -> Iterator[tuple[str, str]]:
    """Pipe and log directories of a control daemon of this test's own; stopped afterwards.
    Short /tmp paths: MPS puts unix sockets there, and their paths are limited to 108 bytes."""
    need("nvidia-cuda-mps-control")
    pipe, log = tempfile.mkdtemp(prefix="gf-mps-"), tempfile.mkdtemp(prefix="gf-mpslog-")
    try:
        yield pipe, log
    finally:
        env = gc.node_env({"CUDA_MPS_PIPE_DIRECTORY": pipe, "CUDA_MPS_LOG_DIRECTORY": log})
        if Path(pipe, "control").exists():
            print(f"\n$ echo quit | CUDA_MPS_PIPE_DIRECTORY={pipe} nvidia-cuda-mps-control", flush=True)
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=env, text=True,
                           capture_output=True, timeout=60)
            # The next test starts a daemon of its own; let this one go first.
            deadline = time.monotonic() + 30
            while Path(pipe, "control").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
        control_log = Path(log, "control.log")
        if control_log.exists():
            print(f"[{control_log}, last lines]\n" + "\n".join(control_log.read_text().splitlines()[-15:]))
        shutil.rmtree(pipe, ignore_errors=True)
        shutil.rmtree(log, ignore_errors=True)


def allocation(core: int, memory: str, minor: int = 0) -> str:
    return json.dumps({"gpu": [{"minor": minor, "resources": {
        "koordinator.sh/gpu-core": str(core), "koordinator.sh/gpu-memory": memory}}]})


def node_run(dirs: tuple[str, str], alloc: str, *cmd: str) -> list[str]:
    pipe, log = dirs
    return gc.gpufleet_cmd("node", "run", "--pipe-dir", pipe, "--log-dir", log,
                           "--allocation", alloc, "--", *cmd)


def solo_rate(seconds: float) -> float:
    """Iterations/s of the matmul loop alone on minor 0 (the GPU the MPS runs get), outside MPS,
    with no limit."""
    uuid = next(d["id"] for d in inventory()["devices"] if d["minor"] == 0)
    res = run([sys.executable, "-c", gc.MATMUL_SCRIPT, str(seconds)],
              env=gc.node_env({"CUDA_VISIBLE_DEVICES": uuid}), label="solo, no MPS, no limit")
    assert res.returncode == 0, f"solo matmul loop failed: {res.stderr}"
    return float(gc.last_json_line(res.stdout, "iters_per_s")["iters_per_s"])


# --- a. inventory --------------------------------------------------------------------------------
def test_inventory_matches_nvidia_smi():
    need("nvidia-smi")
    run(["nvidia-smi", "topo", "-m"], label="for the NUMA/PCIe/NVLink fields, by eye")
    smi = smi_gpus()
    inv = inventory()
    problems = gc.compare_inventory(inv, smi)
    assert not problems, "inventory disagrees with nvidia-smi:\n  " + "\n  ".join(problems)


# --- b. memory limit -----------------------------------------------------------------------------
def test_mps_memory_limit_stops_an_allocation_over_4gib(mps_dirs):
    need_torch_cuda()
    alloc = allocation(50, "4Gi")
    env_res = run(gc.gpufleet_cmd("node", "run", "--print-env", "--pipe-dir", mps_dirs[0],
                                  "--log-dir", mps_dirs[1], "--allocation", alloc))
    assert env_res.returncode == 0, env_res.stderr
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M" in env_res.stdout.splitlines(), \
        "the runner should pin 4096M on the first visible device"
    res = run(node_run(mps_dirs, alloc, sys.executable, "-c", gc.OOM_SCRIPT),
              label="2 GiB must fit, 6 GiB more must fail")
    assert res.returncode != 4, "allocating 2 GiB under a 4 GiB limit failed"
    assert res.returncode != 3, "MPS let the process allocate 8 GiB in all with a 4 GiB limit"
    assert res.returncode == 0 and gc.OOM_MARKER in res.stdout, \
        f"expected an out-of-memory error past 4 GiB (exit {res.returncode}): {res.stderr[-2000:]}"


# --- c. core limit and sharing -------------------------------------------------------------------
def test_mps_core_limit_slows_a_single_client(mps_dirs):
    """One client at 25% of the SMs alone on the GPU: a compute-bound matmul should run clearly
    slower than unrestricted. This is what shows the thread percentage binds at all."""
    need_torch_cuda()
    solo = solo_rate(5)
    res = run(node_run(mps_dirs, allocation(25, "8Gi"), sys.executable, "-c", gc.MATMUL_SCRIPT, "5"),
              label="alone under MPS at 25%")
    assert res.returncode == 0, f"matmul under MPS failed: {res.stderr[-2000:]}"
    rep = gc.last_json_line(res.stdout, "iters_per_s")
    ratio = rep["iters_per_s"] / solo
    print(f"\nsolo {solo:.1f} it/s, alone at 25%: {rep['iters_per_s']:.1f} it/s (ratio {ratio:.2f})")
    assert rep["thread_percentage"] == "25"
    # Heuristic bound: 25% of the SMs should give well under 75% of the speed of all of them.
    assert ratio < 0.75, f"a 25% client ran at {ratio:.2f}x the unrestricted speed; the limit seems not to bind"


def test_two_half_shares_run_concurrently_within_their_limits(mps_dirs):
    need_torch_cuda()
    solo = solo_rate(5)
    barrier = Path(tempfile.mkdtemp(prefix="gf-barrier-"))
    alloc = allocation(50, "8Gi")
    procs: list[subprocess.Popen[str]] = []
    try:
        for name in ("first", "second"):
            cmd = node_run(mps_dirs, alloc, sys.executable, "-c", gc.MATMUL_SCRIPT, "5",
                           str(barrier), name, "2")
            print(f"\n$ {shlex.join(cmd)} &", flush=True)
            procs.append(subprocess.Popen(cmd, env=gc.node_env(), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
            if name == "first":
                # Let the first runner start the daemon, so the second finds it rather than racing it.
                deadline = time.monotonic() + 60
                while not Path(mps_dirs[0], "control").exists() and time.monotonic() < deadline \
                        and procs[0].poll() is None:
                    time.sleep(0.1)
        outs = [p.communicate(timeout=TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
        shutil.rmtree(barrier, ignore_errors=True)
    reports = []
    for p, (out, err), name in zip(procs, outs, ("first", "second")):
        print(f"[{name}: exit {p.returncode}]\n{out}" + (f"[stderr]\n{err}" if err else ""))
        assert p.returncode == 0, f"{name} process failed (exit {p.returncode}): {err[-2000:]}"
        reports.append(gc.last_json_line(out, "iters_per_s"))
    both = gc.overlap_seconds(reports[0], reports[1])
    ratios = [r["iters_per_s"] / solo for r in reports]
    print(f"\nsolo {solo:.1f} it/s; concurrent at 50%: "
          + ", ".join(f"{r['iters_per_s']:.1f} it/s ({q:.2f}x)" for r, q in zip(reports, ratios))
          + f"; sum {sum(ratios):.2f}x; overlap {both:.2f} s")
    for r in reports:
        assert r["thread_percentage"] == "50", f"the process saw thread percentage {r['thread_percentage']!r}"
    assert both >= 2.5, f"the two 5 s loops overlapped only {both:.2f} s; they did not share the GPU"
    # Heuristic: two compute-bound loops sharing one GPU cannot each keep 90% of solo speed.
    assert max(ratios) < 0.9, f"a shared process ran at {max(ratios):.2f}x solo speed"


# --- d. profiler ---------------------------------------------------------------------------------
def test_profiler_figures_are_plausible(tmp_path):
    need_torch_cuda()
    smi = smi_gpus()
    inv_model = {d["id"]: d["model"] for d in inventory()["devices"]}
    first = min(smi, key=lambda g: g.index)
    # PCI order makes torch's device 0 the GPU nvidia-smi lists first.
    env = gc.node_env({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    results = {}
    for label, size in (("4096", 4096), ("8192", 8192)):
        script = tmp_path / f"mm{size}.py"
        script.write_text(gc.profile_script(size))
        res = run(gc.gpufleet_cmd("node", "profile", str(script), "--steps", "30", "--warmup", "5",
                                  "--json"), env=env, label=f"{size}x{size} matmul per step")
        assert res.returncode == 0, f"gpufleet node profile failed: {res.stderr[-2000:]}"
        results[label] = gc.last_json_line(res.stdout, "iterations_per_s")
    small, big = results["4096"], results["8192"]
    rate = small["iterations_per_s"]
    assert rate > 0 and math.isfinite(rate), f"iterations/s {rate!r}"
    assert small["memory_source"] == "torch"
    card = first.memory_mib << 20
    # a and b are 32 MiB each in half precision, plus the product: well over 64 MiB, under the card.
    assert 64 << 20 <= small["peak_memory_bytes"] <= card, \
        f"peak memory {small['peak_memory_bytes']} B outside [64 MiB, {first.memory_mib} MiB]"
    assert small["gpu_model"] == inv_model[first.uuid], \
        f"profiler model {small['gpu_model']!r} vs inventory {inv_model[first.uuid]!r}"
    print(f"\n4096: {rate:.1f} it/s, 8192 (8x the work): {big['iterations_per_s']:.1f} it/s "
          f"(ratio {rate / big['iterations_per_s']:.1f})")
    assert big["iterations_per_s"] < rate, "8x the matmul work per step was not slower"
