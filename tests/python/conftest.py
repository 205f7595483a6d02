from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public traces not found at {SHARED_DATA} (CI has ../shared beside the checkout)")
    return SHARED_DATA


def gpu_node(name: str, count: int = 4, memory: str = "16Gi", model: str = "V100M16", **extra):
    node = {"name": name, "cpu": "64", "memory": "256Gi",
            "gpus": {"count": count, "model": model, "memory": memory}}
    node.update(extra)
    return node
