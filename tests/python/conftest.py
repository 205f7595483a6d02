from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()
# Set by .ci/run: there the public traces must be present, so a missing file fails the test.
REQUIRE_SHARED_DATA = bool(os.environ.get("GPUFLEET_REQUIRE_SHARED_DATA"))


def missing_shared_data(path: Path) -> None:
    """Skips the calling test (fails it under .ci/run) because ``path`` is absent."""
    msg = f"public traces not found at {path} (CI has ../shared beside the checkout)"
    if REQUIRE_SHARED_DATA:
        pytest.fail(msg + "; GPUFLEET_REQUIRE_SHARED_DATA is set")
    pytest.skip(msg)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        missing_shared_data(SHARED_DATA)
    return SHARED_DATA


# --- builders shared by the tests (one definition; files bind their own defaults with partial) ---
def gpu_node(name: str, count: int = 4, memory: str = "16Gi", model: str = "V100M16",
             cpu: str = "64", ram: str = "256Gi", **extra):
    """A node spec with `count` identical GPUs."""
    node = {"name": name, "cpu": cpu, "memory": ram,
            "gpus": {"count": count, "model": model, "memory": memory}}
    node.update(extra)
    return node


def job(name: str, replicas: int = 1, gpus: int = 1, cpu: str = "1", **extra):
    """An engine job spec: `replicas` tasks of `gpus` whole GPUs and `cpu` each."""
    return {"name": name, "replicas": replicas, "requests": {"cpu": cpu, "nvidia.com/gpu": gpus},
            **extra}
