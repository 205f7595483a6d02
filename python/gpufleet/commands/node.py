"""`gpufleet node inventory|run|profile`: node-side tools (NVML inventory, MPS runner, profiler).

Pure Python: runs where the native extension was never built. ``inventory`` prints YAML by
default, because its output is a device list to save as a scenario's devices or the device
plugin's ``--devices`` file (as ``kubectl config view`` prints YAML); ``-o wide`` prints it as a
table. ``profile`` prints a few lines by default; ``-o json|yaml`` print its result document."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Any

from gpufleet.commands._bounds import DEVICE_MAX, STEPS_MAX, count
from gpufleet.commands._output import add_output_options, emit, is_document, render, table


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds the ``node`` subcommand and its ``inventory``, ``run`` and ``profile`` commands."""
    p = subparsers.add_parser("node", help="node-side tools: GPU inventory, run under MPS, profile",
                              description="Node-side tools for GPU machines.")
    sub = p.add_subparsers(dest="node_command", metavar="{inventory,run,profile}")
    sub.required = True

    inv = sub.add_parser("inventory", help="print this node's GPUs as device spec entries")
    add_output_options(inv, default="YAML (-o yaml), the device list as a scenario or --devices file takes it")
    inv.add_argument("--replay", metavar="NVML_JSON",
                     help="read recorded NVML answers instead of the live driver")
    inv.set_defaults(func=inventory_cmd)

    run = sub.add_parser("run", help="run a command under NVIDIA MPS with an allocation's limits",
                         description="Run CMD with the environment of an allocation (Koordinator "
                         "device-allocated JSON, or an annotations object with either style) under "
                         "NVIDIA MPS. Example: gpufleet node run --allocation "
                         "'{\"gpu\":[{\"minor\":0,\"resources\":{\"koordinator.sh/gpu-core\":\"50\"}}]}' -- python train.py")
    run.add_argument("--allocation", required=True, metavar="JSON|@FILE")
    run.add_argument("--devices", metavar="FILE", help="device specs (default: read NVML)")
    run.add_argument("--pipe-dir", help="CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps)")
    run.add_argument("--log-dir", help="CUDA_MPS_LOG_DIRECTORY (default /tmp/nvidia-mps-log)")
    run.add_argument("--print-env", action="store_true",
                     help="print the variables that would be set and exit (no MPS needed)")
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    run.set_defaults(func=run_cmd)

    prof = sub.add_parser("profile", help="time a script's step() and report peak GPU memory")
    prof.add_argument("script", help="Python file defining step() (and optionally setup())")
    prof.add_argument("--steps", type=count(1, STEPS_MAX), default=20,
                      help=f"timed steps, 1 to {STEPS_MAX:,} (default %(default)s)")
    prof.add_argument("--warmup", type=count(0, STEPS_MAX), default=3,
                      help=f"untimed steps, 0 to {STEPS_MAX:,} (default %(default)s)")
    prof.add_argument("--device", type=count(0, DEVICE_MAX), default=None,
                      help="GPU index for memory readings")
    add_output_options(prof, default="iterations/s, peak memory, GPU model and steps, one per line "
                                      "(wide: also the time per step and the warm-up)")
    prof.set_defaults(func=profile_cmd)


def _dump(doc: Any, fmt: str | None) -> str:
    if fmt is None:  # the default: YAML, or JSON where PyYAML is missing (a bare node checkout)
        from importlib.util import find_spec
        return render(doc, "yaml" if find_spec("yaml") is not None else "json")
    return render(doc, fmt)


def _inventory_table(doc: dict[str, Any]) -> str:
    """One row per device: minor, model, memory, health, NUMA/socket/PCIe placement, NVLink group."""
    from gpufleet.node.keys import RES_GPU_MEMORY
    group = {m: i for i, g in enumerate(doc.get("nvlink_groups", [])) for m in g}
    rows = []
    for d in doc["devices"]:
        res, topo = d.get("resources", {}), d.get("topology", {})
        rows.append([d.get("minor"), d.get("type"), d.get("model") or "-",
                     res.get(RES_GPU_MEMORY, "-"), "yes" if d.get("health", True) else "no",
                     topo.get("nodeID", "-"), topo.get("socketID", "-"), topo.get("pcieID") or "-",
                     topo.get("busID") or "-", group.get(d.get("minor"), "-"), d.get("id") or "-"])
        for m in d.get("mig") or []:  # a GPU in MIG mode: one row per instance, minor/slot
            rows.append([f"{d.get('minor')}/{m.get('start')}", f"mig {m.get('profile')}", d.get("model") or "-",
                         m.get("memory", "-"), "yes" if m.get("health", True) else "no", "", "", "", "", "",
                         m.get("id") or "-"])
    text = table(rows, ["MINOR", "TYPE", "MODEL", "MEMORY", "HEALTHY", "NUMA", "SOCKET", "PCIE", "BUS",
                        "NVLINK GROUP", "ID"])
    if doc.get("driver_version"):
        text += f"\n\ndriver {doc['driver_version']}"
    return text


def read_replay(path: str) -> tuple[Any, Any]:
    """``--replay PATH``: the recorded NVML answers and the inventory read from them. ValueError,
    one line naming the file, for a recording that is unreadable or whose answers are malformed
    (a recording is data: what the inventory fails on is in the file)."""
    from gpufleet.node.inventory import read_inventory
    from gpufleet.node.nvml_replay import ReplayNvml
    nvml = ReplayNvml.from_json(path)
    try:
        return nvml, read_inventory(nvml)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{path}: recorded NVML answers unusable: {type(e).__name__}: {e}") from None


def inventory_cmd(args: argparse.Namespace) -> int:
    """``gpufleet node inventory``: 0, or 2 when NVML is unavailable (no driver, no GPU) or the
    ``--replay`` file is unusable."""
    from gpufleet.node.inventory import NvmlUnavailable, read_inventory
    try:
        inv = read_replay(args.replay)[1] if args.replay else read_inventory()
    except NvmlUnavailable as e:
        print(f"gpufleet node inventory: no GPU inventory: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"gpufleet node inventory: {e}", file=sys.stderr)
        return 2
    if args.output == "wide":
        print(_inventory_table(inv.to_dict()))
    else:
        print(_dump(inv.to_dict(), args.output), end="")
    return 0


def _read_arg(value: str) -> str:
    """``@FILE``: the file's text, read by the bounded reader (ValueError on one line); else the
    value itself."""
    if not value.startswith("@"):
        return value
    from gpufleet.documents import ScenarioError, read_bytes
    raw = read_bytes(value[1:])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{value[1:]}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset "
                            f"{e.start})") from None


def run_cmd(args: argparse.Namespace) -> int:
    """``gpufleet node run``: the command's exit status, or 2 when the allocation, devices or MPS
    are unusable (the message says which)."""
    from gpufleet.node.annotations import parse_allocation_text
    from gpufleet.node import mps
    from gpufleet.node.inventory import NvmlUnavailable, load_devices_file, read_inventory
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    cfg = mps.MpsConfig()
    if args.pipe_dir:
        cfg.pipe_dir = args.pipe_dir
    if args.log_dir:
        cfg.log_dir = args.log_dir
    try:
        alloc = parse_allocation_text(_read_arg(args.allocation))
        if not args.print_env:
            if not cmd:
                raise ValueError("no command given (gpufleet node run --allocation ... -- CMD)")
            mps.find_control()  # fail fast, before reading NVML
        devices = load_devices_file(args.devices) if args.devices else read_inventory()
        if args.print_env:
            from gpufleet.node.env import container_env
            env = container_env(alloc, devices.devices)
            env.update(cfg.env())
            for k in sorted(env):
                print(f"{k}={env[k]}")
            return 0
        return mps.run_under_mps(alloc, cmd, devices.devices, cfg)
    except (mps.MpsUnavailable, NvmlUnavailable) as e:
        print(f"gpufleet node run: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError) as e:
        print(f"gpufleet node run: {e}", file=sys.stderr)
        return 2


def profile_cmd(args: argparse.Namespace) -> int:
    """``gpufleet node profile``: 0, or 2 when the script cannot be loaded or defines no step()."""
    import runpy
    from dataclasses import asdict

    from gpufleet.node.profiler import profile
    if not os.path.isfile(args.script):   # runpy would take a folder for a package to run
        print(f"gpufleet node profile: cannot load {args.script}: not a file", file=sys.stderr)
        return 2
    try:
        ns = runpy.run_path(args.script, run_name="__gpufleet_profile__")
        step = ns.get("step")
        if not callable(step):
            print(f"gpufleet node profile: {args.script} defines no step() function", file=sys.stderr)
            return 2
        if callable(ns.get("setup")):
            ns["setup"]()
        res = profile(step, warmup=args.warmup, iters=args.steps, device=args.device)
    except (OSError, SyntaxError) as e:
        print(f"gpufleet node profile: cannot load {args.script}: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the script's own error, reported where it happened
        print(f"gpufleet node profile: {args.script}{_script_line(e, args.script)}: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if is_document(args.output):
        emit(asdict(res), args.output)
        return 0
    peak = "n/a (no torch CUDA or NVML)" if res.peak_memory_bytes is None else \
        f"{res.peak_memory_bytes / 2**20:.1f} MiB ({res.memory_source})"
    print(f"iterations/s: {res.iterations_per_s:.3f}\npeak memory:  {peak}\n"
          f"gpu model:    {res.gpu_model or 'n/a'}\nsteps:        {res.iterations} in {res.seconds:.3f} s")
    if args.output == "wide":
        per_step = 1000 * res.seconds / res.iterations if res.iterations else float("nan")
        print(f"time/step:    {per_step:.3f} ms\nwarm-up:      {args.warmup} steps (not timed)")
    return 0


def _script_line(e: BaseException, script: str) -> str:
    """``, line N`` of the last frame of ``script`` in the error's traceback, if any."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(script)]
    return f", line {frames[-1].lineno}" if frames else ""
