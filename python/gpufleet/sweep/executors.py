"""Where a sweep's experiments run (:func:`gpufleet.sweep.sweep`, ``executor=``): in this process,
in a local process pool, or as Ray tasks. Every path runs the same function on the same loaded
traces and hands each result to the caller's ``done`` callback, which records it. This module
depends on the experiments and their runner only; the sweep calls it, never the other way."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .errors import SweepError
from .experiment import Experiment
from .inputs import Setup
from .run import run_experiment

__all__ = ["EXECUTORS", "import_ray", "on_ray", "pool", "serial"]

#: Where experiments run: ``"process"`` (a local pool; one worker runs in this process) or
#: ``"ray"`` (a Ray cluster, local or at ``ray_address``).
EXECUTORS: tuple[str, ...] = ("process", "ray")

# A pool worker's loaded traces, installed once per worker process by the pool's initializer.
_WORKER_SETUPS: dict[str, Setup] = {}


def _install_setups(setups: dict[str, Setup]) -> None:
    _WORKER_SETUPS.clear()
    _WORKER_SETUPS.update(setups)


def _run_in_worker(exp: Experiment) -> tuple[dict[str, float | None], tuple[float, float]]:
    return _timed(_WORKER_SETUPS[exp.trace], exp)


def _timed(setup: Setup, exp: Experiment) -> tuple[dict[str, float | None], tuple[float, float]]:
    """The experiment's metrics, and its wall-clock and CPU seconds in the process that ran it."""
    wall, cpu = time.perf_counter(), time.process_time()
    metrics = run_experiment(exp.kind, setup.data, exp.policy, exp.seed, dict(exp.options))
    return metrics, (time.perf_counter() - wall, time.process_time() - cpu)


Done = Callable[[Experiment, dict, tuple[float, float]], None]


def serial(todo: list[Experiment], setups: dict[str, Setup], done: Done) -> None:
    """Runs ``todo`` one after another in this process."""
    for exp in todo:
        try:
            metrics, timing = _timed(setups[exp.trace], exp)
        except Exception as e:
            raise _failed(exp, e) from e
        done(exp, metrics, timing)


def pool(todo: list[Experiment], setups: dict[str, Setup], workers: int, done: Done) -> None:
    """Runs ``todo`` in ``workers`` local processes; the first failure cancels the rest."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    # fork where there is one (Linux): workers start at once with the loaded traces and the
    # caller's script is not imported again in each worker (spawn and forkserver do that, which
    # breaks scripts without an `if __name__ == "__main__":` guard and code fed on stdin).
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_install_setups,
                               initargs=(setups,))
    try:
        pending = {pool.submit(_run_in_worker, exp): exp for exp in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                exp = pending.pop(fut)
                try:
                    metrics, timing = fut.result()
                except Exception as e:
                    raise _failed(exp, e) from e
                done(exp, metrics, timing)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def import_ray():
    """The ``ray`` module, or SweepError saying how to install it."""
    from gpufleet._extras import MissingExtra, require
    try:
        return require("ray", "ray", "executor='ray'")
    except MissingExtra as e:
        raise SweepError(f"{e}; or use the local process pool (executor='process')") from None


def _run_ray_task(setup: Setup, exp: Experiment) -> tuple[dict[str, float | None], tuple[float, float]]:
    return _timed(setup, exp)


def on_ray(todo: list[Experiment], setups: dict[str, Setup], workers: int | None,
             address: str | None, done: Done) -> None:
    """Runs ``todo`` as Ray tasks of one CPU: on the instance this process already started, else
    on a new local one with ``workers`` CPUs, or on the cluster at ``address``."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"address": address, "include_dashboard": False,
                                  "log_to_driver": False, "configure_logging": False}
        if address is None and workers:
            kwargs["num_cpus"] = workers
        ray.init(**kwargs)
        started = True
    try:
        refs = {label: ray.put(s) for label, s in setups.items()}
        task = ray.remote(num_cpus=1, max_retries=0)(_run_ray_task)
        pending = {task.remote(refs[exp.trace], exp): exp for exp in todo}
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                exp = pending.pop(ref)
                try:
                    metrics, timing = ray.get(ref)
                except Exception as e:
                    for other in pending:
                        ray.cancel(other)
                    raise _failed(exp, getattr(e, "cause", None) or e) from e
                done(exp, metrics, timing)
    finally:
        if started:
            ray.shutdown()


def _failed(exp: Experiment, e: BaseException) -> SweepError:
    opts = ", ".join(f"{k}={v!r}" for k, v in exp.options)
    return SweepError(f"experiment failed: {exp.kind} trace {exp.trace!r} policy {exp.policy!r} seed "
                      f"{exp.seed}{' ' + opts if opts else ''}: {type(e).__name__}: {e}")
