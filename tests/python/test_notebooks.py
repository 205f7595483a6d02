"""Every notebook in notebooks/ is executed; a notebook that does not run is a failing test."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.fixture
def this_interpreter_kernel(tmp_path, monkeypatch) -> str:
    """A 'python3' kernel spec that runs this very interpreter. JUPYTER_PATH is searched first, so
    a kernel spec elsewhere on the machine cannot send the notebooks to another environment."""
    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    return "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path: Path, this_interpreter_kernel: str, tmp_path: Path):
    nb = nbformat.read(path, as_version=4)
    # The kernel talks over Unix sockets, not TCP ports: a port the manager picked can be taken by
    # another test's server before the kernel binds it ("Kernel died before replying").
    km = KernelManager(kernel_name=this_interpreter_kernel, transport="ipc",
                       ip=str(tmp_path / "kernel"))
    client = NotebookClient(nb, km=km, timeout=600, kernel_name=this_interpreter_kernel,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
