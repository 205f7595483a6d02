"""Measure a training step: iterations per second, peak GPU memory and the GPU model.

Peak memory comes from, in order:
  1. torch.cuda (if torch with CUDA imports): `max_memory_allocated` after resetting peak stats.
     This is the caching allocator's peak for tensors; it excludes the CUDA context (~0.5 GiB)
     and allocator slack, so size a grant somewhat above it.
  2. NVML: the device's used memory sampled every `sample_interval_s` during the timed loop.
     Device-wide, so other processes on the GPU are counted too.
  3. Neither: `peak_memory_bytes` is None (CPU-only machine); the rate is still measured.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from gpufleet.node.inventory import NvmlUnavailable, load_nvml, normalize_model


@dataclass(frozen=True)
class ProfileResult:
    iterations_per_s: float
    peak_memory_bytes: int | None
    gpu_model: str | None
    iterations: int = 0
    seconds: float = 0.0
    memory_source: str = "none"  # "torch", "nvml" or "none"


def _cuda_torch() -> Any:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken CUDA install is "no CUDA" for profiling purposes
        return None


class _NvmlSampler:
    """Background thread recording the highest `used` memory NVML reports for one GPU."""

    def __init__(self, nvml: Any, index: int, interval_s: float) -> None:
        self.nvml, self.handle = nvml, nvml.nvmlDeviceGetHandleByIndex(index)
        self.interval_s = interval_s
        self.peak = int(nvml.nvmlDeviceGetMemoryInfo(self.handle).used)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def sample(self) -> None:
        try:
            self.peak = max(self.peak, int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used))
        except Exception:
            pass

    def __enter__(self) -> "_NvmlSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # one last reading so very short loops still count


def profile(step_fn: Callable[[], Any], warmup: int = 3, iters: int = 20, device: int | None = None,
            *, nvml: Any = None, use_torch: bool = True, sample_interval_s: float = 0.01) -> ProfileResult:
    """Runs `step_fn` `warmup` times untimed, then `iters` times timed.

    `device` is the CUDA/NVML index to read memory from (default 0). `nvml` injects an NVML
    object (tests); otherwise pynvml is tried when torch has no CUDA."""
    if iters <= 0 or warmup < 0:
        raise ValueError(f"need iters > 0 and warmup >= 0, got iters={iters}, warmup={warmup}")
    index = 0 if device is None else int(device)
    torch = _cuda_torch() if use_torch else None
    own_nvml = False
    if torch is None and nvml is None:
        try:
            nvml, own_nvml = load_nvml(), True
        except NvmlUnavailable:
            nvml = None
    try:
        for _ in range(warmup):
            step_fn()
        model: str | None = None
        if torch is not None:
            torch.cuda.synchronize(index)
            torch.cuda.reset_peak_memory_stats(index)
            t0 = time.perf_counter()
            for _ in range(iters):
                step_fn()
            torch.cuda.synchronize(index)  # kernels are async; count them inside the window
            elapsed = time.perf_counter() - t0
            peak: int | None = int(torch.cuda.max_memory_allocated(index))
            model, source = normalize_model(torch.cuda.get_device_name(index)), "torch"
        elif nvml is not None:
            with _NvmlSampler(nvml, index, sample_interval_s) as sampler:
                t0 = time.perf_counter()
                for _ in range(iters):
                    step_fn()
                elapsed = time.perf_counter() - t0
            peak, source = sampler.peak, "nvml"
            name = nvml.nvmlDeviceGetName(sampler.handle)
            model = normalize_model(name.decode() if isinstance(name, bytes) else str(name))
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                step_fn()
            elapsed = time.perf_counter() - t0
            peak, source = None, "none"
    finally:
        if own_nvml:
            try:
                nvml.nvmlShutdown()
            except Exception:
                pass
    elapsed = max(elapsed, 1e-9)
    return ProfileResult(iters / elapsed, peak, model, iters, elapsed, source)
