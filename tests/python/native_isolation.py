"""Runs a piece of Python in a fresh interpreter, so a test can watch the native core crash or
hang without taking the test run down with it, and assert on how the child ended."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap


def run_isolated(code: str, timeout: float = 60.0, env: dict[str, str] | None = None) -> str:
    """Runs `code` with this interpreter and returns its stdout; fails the calling test, naming
    the signal, when the child dies, exits non-zero or outlives `timeout` seconds."""
    child_env = {**os.environ, **(env or {})}
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=timeout, env=child_env)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the child did not finish in {timeout:g} s (a deadlock?); "
                             f"its output: {e.stdout!r} {e.stderr!r}") from None
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        raise AssertionError(f"the child died of {name}; stderr: {done.stderr[-2000:]}")
    assert done.returncode == 0, f"the child exited with {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout
