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


def gpu_node(name: str, count: int = 4, memory: str = "16Gi", model: str = "V100M16", **extra):
    node = {"name": name, "cpu": "64", "memory": "256Gi",
            "gpus": {"count": count, "model": model, "memory": memory}}
    node.update(extra)
    return node
