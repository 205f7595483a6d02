"""Writes the notebooks from plain Python files whose cells are separated by lines '# %%' (code)
or '# %% [markdown]' (markdown, each line starting with '# '). Keeps notebooks reviewable as text:
notebooks/src/NAME.py is the source, notebooks/NAME.ipynb the generated notebook.

    python tools/make_notebook.py notebooks/src/NAME.py ...   # unexecuted notebooks (no outputs)
    python tools/make_notebook.py --execute NAME ...          # executed, outputs kept (NAME, its
                                                              # source or its .ipynb)
    python tools/make_notebook.py --execute --all             # every notebook, as committed

The committed notebooks carry their outputs; tests/python/test_notebooks.py executes each and
checks that its text outputs are the committed ones. So an executed notebook keeps only what a
rerun reproduces: no timings or kernel metadata, cell ids numbered in order, figures at a modest
resolution (the kernel's matplotlibrc, :data:`MATPLOTLIBRC`)."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"

# The kernel's matplotlib settings: figures small enough to commit, the same on every machine
# (no user matplotlibrc is read), and the same figure sizes in the text outputs.
MATPLOTLIBRC = "figure.dpi: 80\nsavefig.dpi: 80\n"

# Notebook metadata that stays; the rest (the language version, widget state) varies by machine.
_KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def build(src: Path) -> nbformat.NotebookNode:
    """The unexecuted notebook of source ``src``, cell ids numbered in order."""
    cells = []
    kind, lines = None, []

    def flush() -> None:
        if kind is None:
            return
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in text.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(text))
        else:
            cells.append(nbformat.v4.new_code_cell(text))

    for line in src.read_text().splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        else:
            lines.append(line)
    flush()
    for i, cell in enumerate(cells):
        cell.id = f"cell-{i:02d}"   # nbformat draws random ids: a rewrite would change every one
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = dict(_KERNELSPEC)
    return nb


def execute(nb: nbformat.NotebookNode, workdir: Path, timeout: int = 600) -> nbformat.NotebookNode:
    """Runs every cell of ``nb`` in place, in notebooks/ (so ../shared/data resolves as for a
    reader), on a kernel of this very interpreter; ``workdir`` (an empty folder) holds the kernel's
    spec, settings and sockets. Cell errors stay in the outputs (the caller looks for them).
    Returns ``nb`` without volatile metadata (:func:`clean`)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    spec = workdir / "kernels" / "python3"
    spec.mkdir(parents=True)
    (workdir / "matplotlibrc").write_text(MATPLOTLIBRC)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python",
        # The notebook front end's own backend, whatever MPLBACKEND the caller has (the test
        # command sets Agg, under which figures would not be shown at all).
        "env": {"MATPLOTLIBRC": str(workdir / "matplotlibrc"), "PYTHONHASHSEED": "0",
                "MPLBACKEND": "module://matplotlib_inline.backend_inline"}}))
    # Only this spec is searched: a kernel elsewhere on the machine cannot run the notebook in
    # another environment. Unix sockets, not TCP ports: a port the manager picked can be taken by
    # another process before the kernel binds it ("Kernel died before replying").
    specs = KernelSpecManager(kernel_dirs=[str(workdir / "kernels")])
    km = KernelManager(kernel_name="python3", kernel_spec_manager=specs, transport="ipc",
                       ip=str(workdir / "kernel"))
    client = NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3", allow_errors=True,
                            record_timing=False, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    return clean(nb)


# The libraries whose versions decide how outputs print (NumPy 2 writes np.float64(0.5) where
# NumPy 1 writes 0.5; pandas and matplotlib change table and figure reprs between releases).
_PRINTING_LIBRARIES = ("numpy", "pandas", "matplotlib")


def printing_versions() -> dict[str, str]:
    """Python's and the printing libraries' major.minor versions, as this interpreter has them
    (the kernel runs this interpreter): recorded in an executed notebook's metadata."""
    from importlib.metadata import PackageNotFoundError, version
    out = {"python": "%d.%d" % sys.version_info[:2]}
    for name in _PRINTING_LIBRARIES:
        try:
            out[name] = ".".join(version(name).split(".")[:2])
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def recorded_versions(nb: nbformat.NotebookNode) -> dict[str, str]:
    """The versions a committed notebook's outputs were made with ({} when not recorded)."""
    return dict(nb.metadata.get("gpufleet", {}).get("outputs_made_with", {}))


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drops what differs from run to run although the outputs do not: notebook metadata other
    than the kernel spec, cell execution metadata, output metadata; records the versions that
    decide how the outputs print."""
    nb.metadata = nbformat.NotebookNode(kernelspec=dict(_KERNELSPEC),
                                        gpufleet={"outputs_made_with": printing_versions()})
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            if "metadata" in out:
                out["metadata"] = {}
    return nb


def errors(nb: nbformat.NotebookNode) -> list[str]:
    """'cell N: ename: evalue' for each error output of ``nb``."""
    return [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(nb.cells)
            if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]


def text_outputs(cell: Any) -> list[tuple[str, ...]]:
    """What of a code cell's outputs must not change between runs: stream text, text/plain,
    markdown and HTML (tables), errors. An image is compared only by its presence (PNG bytes
    vary with the library versions), and the text beside it (a figure's repr) is not compared."""
    out = []
    for o in cell.get("outputs", []):
        kind = o.get("output_type")
        if kind == "stream":
            out.append(("stream", o.get("name", ""), o.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            data = o.get("data", {})
            images = sorted(k for k in data if k.startswith("image/"))
            if images:
                out.append(("image", *images))
            else:
                out.append(("data", *(f"{k}: {data[k]}" for k in ("text/plain", "text/markdown", "text/html")
                                      if k in data)))
        elif kind == "error":
            out.append(("error", o.get("ename", ""), o.get("evalue", "")))
    return out


def first_difference(committed: nbformat.NotebookNode, executed: nbformat.NotebookNode,
                     outputs: bool = True) -> int | None:
    """The index of the first cell whose source or (with ``outputs``) text outputs differ, else
    None."""
    for i in range(max(len(committed.cells), len(executed.cells))):
        if i >= len(committed.cells) or i >= len(executed.cells):
            return i
        a, b = committed.cells[i], executed.cells[i]
        if a.cell_type != b.cell_type or a.source != b.source:
            return i
        if outputs and a.cell_type == "code" and text_outputs(a) != text_outputs(b):
            return i
    return None


def names(args: list[str]) -> list[str]:
    """Notebook names (``01_quickstart``) from names, sources or notebook paths; SystemExit
    names one without a source."""
    out = []
    for arg in args:
        name = Path(arg).stem
        if not (SOURCES / f"{name}.py").is_file():
            raise SystemExit(f"make_notebook: no source {SOURCES.relative_to(ROOT)}/{name}.py for {arg!r}")
        out.append(name)
    return out


def write(name: str, executed: bool) -> None:
    nb = build(SOURCES / f"{name}.py")
    if executed:
        with tempfile.TemporaryDirectory(prefix="notebook-") as tmp:
            execute(nb, Path(tmp))
        failed = errors(nb)
        if failed:
            raise SystemExit(f"make_notebook: {name} fails: {failed[0]}")
    nbformat.write(nb, NOTEBOOKS / f"{name}.ipynb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/make_notebook.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names, sources or .ipynb paths")
    parser.add_argument("--execute", action="store_true", help="execute and keep the outputs")
    parser.add_argument("--all", action="store_true", help="every notebook with a source in notebooks/src")
    args = parser.parse_args(argv)
    todo = sorted(p.stem for p in SOURCES.glob("*.py")) if args.all else names(args.notebooks)
    if not todo:
        parser.error("name notebooks or give --all")
    for name in todo:
        write(name, args.execute)
        print(f"wrote notebooks/{name}.ipynb" + (" (executed)" if args.execute else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
