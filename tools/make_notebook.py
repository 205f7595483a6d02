"""Writes a notebook from a plain Python file whose cells are separated by lines '# %%' (code)
or '# %% [markdown]' (markdown, each line starting with '# '). Keeps notebooks reviewable as text:
notebooks/src/NAME.py is the source, notebooks/NAME.ipynb the generated, unexecuted notebook."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def convert(src: Path, dst: Path) -> None:
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
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, dst)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        src = Path(arg)
        convert(src, src.parent.parent / (src.stem + ".ipynb"))
