"""Run a command under NVIDIA MPS with the limits of an allocation.

MPS enforces what `container_env` writes: `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` (share of SMs)
and `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` (per visible device). Both only bind when the process is
an MPS client, so the control daemon must be running with the same pipe directory the client
sees. Process runner and `which` are injectable so the logic is tested without MPS binaries.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from gpufleet.node.annotations import PodAllocation
from gpufleet.node.env import container_env

MPS_CONTROL = "nvidia-cuda-mps-control"

Runner = Callable[..., Any]  # subprocess.run-compatible: runner(argv, env=..., ...) -> .returncode
Which = Callable[[str], "str | None"]


class MpsUnavailable(RuntimeError):
    """The MPS control binary is missing (no NVIDIA driver utilities on this machine)."""


@dataclass
class MpsConfig:
    pipe_dir: str = field(default_factory=lambda: os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"))
    log_dir: str = field(default_factory=lambda: os.environ.get("CUDA_MPS_LOG_DIRECTORY", "/tmp/nvidia-mps-log"))

    def env(self) -> dict[str, str]:
        return {"CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir, "CUDA_MPS_LOG_DIRECTORY": self.log_dir}


def find_control(which: Which = shutil.which) -> str:
    path = which(MPS_CONTROL)
    if not path:
        raise MpsUnavailable(f"{MPS_CONTROL} not found on PATH; NVIDIA MPS needs the driver's "
                             "utilities (and a GPU) on this machine")
    return path


def daemon_running(cfg: MpsConfig) -> bool:
    # The control daemon creates a `control` pipe in its pipe directory while it is up.
    return os.path.exists(os.path.join(cfg.pipe_dir, "control"))


def daemon_start_command(cfg: MpsConfig, control: str = MPS_CONTROL,
                         base_env: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """argv and environment that start the control daemon in background mode (`-d`)."""
    env = dict(os.environ if base_env is None else base_env)
    env.update(cfg.env())
    return [control, "-d"], env


def ensure_daemon(cfg: MpsConfig, control: str, *, runner: Runner = subprocess.run,
                  running: Callable[[MpsConfig], bool] = daemon_running,
                  base_env: Mapping[str, str] | None = None) -> bool:
    """Starts the daemon unless it runs already; True when this call started it."""
    if running(cfg):
        return False
    os.makedirs(cfg.pipe_dir, exist_ok=True)
    os.makedirs(cfg.log_dir, exist_ok=True)
    argv, env = daemon_start_command(cfg, control, base_env)
    res = runner(argv, env=env, check=False)
    if getattr(res, "returncode", 0) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed with exit code {res.returncode}; "
                           f"see {cfg.log_dir}/control.log")
    return True


def client_env(allocation: PodAllocation, devices: Iterable[Mapping[str, Any]] | Mapping[str, Any],
               cfg: MpsConfig, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Full environment for the MPS client: the caller's environment, the allocation's variables
    and the daemon's pipe/log directories."""
    env = dict(os.environ if base_env is None else base_env)
    env.update(container_env(allocation, devices))
    env.update(cfg.env())
    return env


def run_under_mps(allocation: PodAllocation, cmd: Sequence[str],
                  devices: Iterable[Mapping[str, Any]] | Mapping[str, Any], cfg: MpsConfig | None = None,
                  *, runner: Runner = subprocess.run, which: Which = shutil.which,
                  running: Callable[[MpsConfig], bool] = daemon_running,
                  base_env: Mapping[str, str] | None = None) -> int:
    """Starts MPS if needed, then runs `cmd` with the allocation's environment; returns its exit
    code. Raises MpsUnavailable without MPS, ValueError for an allocation this node can't meet."""
    if not cmd:
        raise ValueError("no command to run")
    cfg = cfg or MpsConfig()
    control = find_control(which)
    env = client_env(allocation, devices, cfg, base_env)  # validate before touching the daemon
    ensure_daemon(cfg, control, runner=runner, running=running, base_env=base_env)
    return int(runner(list(cmd), env=env, check=False).returncode)
