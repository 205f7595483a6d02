"""Every notebook in notebooks/ is built from its source in notebooks/src, executed, and compared
with the committed notebook: a notebook that does not run, or whose committed sources or text
outputs are not what a run gives, is a failing test. Each notebook is executed once."""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _tool():
    spec = importlib.util.spec_from_file_location("make_notebook", ROOT / "tools" / "make_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_notebook = _tool()


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


def test_every_notebook_has_a_source():
    missing = [p.name for p in NOTEBOOKS if not (ROOT / "notebooks" / "src" / f"{p.stem}.py").is_file()]
    assert not missing, f"notebooks without a source in notebooks/src: {', '.join(missing)}"


def _with_output(nb, i: int, output) -> nbformat.NotebookNode:
    changed = copy.deepcopy(nb)
    changed.cells[i].outputs = [output]
    return changed


def test_comparison_finds_changed_text_and_ignores_image_bytes():
    nb = make_notebook.build(ROOT / "notebooks" / "src" / "01_quickstart.py")
    code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    printed = _with_output(nb, code, nbformat.v4.new_output("stream", name="stdout", text="0.9527\n"))
    assert make_notebook.first_difference(printed, printed) is None
    other = _with_output(nb, code, nbformat.v4.new_output("stream", name="stdout", text="95.27\n"))
    assert make_notebook.first_difference(printed, other) == code
    figure = {"image/png": "AAAA", "text/plain": "<Figure size 800x320 with 1 Axes>"}
    drawn = _with_output(nb, code, nbformat.v4.new_output("display_data", data=figure))
    redrawn = _with_output(nb, code, nbformat.v4.new_output("display_data", data={**figure, "image/png": "BBBB"}))
    assert make_notebook.first_difference(drawn, redrawn) is None
    assert make_notebook.first_difference(drawn, nb) == code   # an image gone is a difference
    edited = copy.deepcopy(nb)
    edited.cells[code].source += "\n"
    assert make_notebook.first_difference(nb, edited) == code
    assert make_notebook.first_difference(printed, other, outputs=False) is None   # sources alike


def test_executed_notebooks_record_the_versions_that_decide_their_printing():
    versions = make_notebook.printing_versions()
    assert set(versions) == {"python", "numpy", "pandas", "matplotlib"}
    nb = make_notebook.clean(make_notebook.build(ROOT / "notebooks" / "src" / "01_quickstart.py"))
    assert make_notebook.recorded_versions(nb) == versions


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes_and_is_current(path: Path, tmp_path: Path):
    src = ROOT / "notebooks" / "src" / f"{path.stem}.py"
    if not src.is_file():
        pytest.fail(f"notebook {path.name} has no source {src.relative_to(ROOT)}")
    executed = make_notebook.execute(make_notebook.build(src), tmp_path)
    failed = make_notebook.errors(executed)
    assert not failed, f"notebook {path.stem} fails: {failed[0]}"
    committed = nbformat.read(path, as_version=4)
    made_with = make_notebook.recorded_versions(committed)
    assert made_with, f"notebook {path.stem} records no versions: run python tools/make_notebook.py --execute {path.stem}"
    # Text outputs are compared where they were made with the same Python and printing libraries
    # (the run on the oldest supported versions prints numbers and tables differently, so there
    # it checks that every notebook runs without error and that its committed sources are current).
    same_printing = made_with == make_notebook.printing_versions()
    cell = make_notebook.first_difference(committed, executed, outputs=same_printing)
    if cell is not None:
        now = executed.cells[cell] if cell < len(executed.cells) else None
        got = make_notebook.text_outputs(now) if now is not None and now.cell_type == "code" else []
        pytest.fail(f"notebook {path.stem} is not current: run python tools/make_notebook.py --execute "
                    f"{path.stem} (cell {cell} differs; a run now prints {str(got)[:300]})")
