"""Every fenced code block of README.md and docs/*.md is checked, or says why not.

* ```python: executed, in a fresh working directory beside a ``shared`` link to the public traces
  (so ``../shared/data`` resolves as it does from the project root) and links to the project's
  example folders; what a snippet writes stays in that temporary directory.
* ```bash / ```sh / ```console: every ``gpufleet ...`` command line is parsed by the command's own
  parser (``gpufleet.cli.build_parser``), marked or not. In an unmarked block every line must be
  such a command, and each is run in full (``gpufleet.cli.main``, exit status 0) unless its command
  is in :data:`PARSE_ONLY` (servers, and studies of many runs).
* ```yaml: parsed (every document).
* anything else (diagrams, C++, log excerpts, other shells' commands), or a block of the above that
  cannot run here: the line right before the fence is ``<!-- not run: REASON -->`` with a reason."""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, SHARED_DATA, missing_shared_data

from gpufleet.cli import build_parser, main

# Commands parsed but not run: they serve until stopped, or run a study of many experiments.
PARSE_ONLY = {"extender": "serves until stopped", "deviceplugin": "serves until stopped",
              "sweep": "many experiments"}
# Folders a snippet may read by a path relative to the project root.
PROJECT_FOLDERS = ("examples", "tests", "benchmarks", "notebooks")
SHELLS = {"bash", "sh", "console", "shell"}
MARKER = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")


@dataclass
class Block:
    path: Path
    line: int           # of the opening fence, from 1
    lang: str
    text: str
    not_run: str | None  # the marker's reason, "" for a marker without one

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, end = len(m["indent"]), i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        assert end < len(lines), f"{path.relative_to(ROOT)}:{i + 1}: code block never closed"
        body = "\n".join(ln[indent:] if not ln[:indent].strip() else ln.lstrip() for ln in lines[i + 1:end])
        marker = MARKER.match(lines[i - 1]) if i else None
        found.append(Block(path, i + 1, m["lang"].lower(), body, marker["reason"] if marker else None))
        i = end + 1
    return found


ALL_BLOCKS = [b for p in doc_files() for b in blocks_of(p)]


def _id(b: Block) -> str:
    return f"{b.where}:{b.lang or 'text'}"


def shell_commands(text: str) -> list[str]:
    """The command lines of a shell block: continuations joined, comments, prompts and blank lines
    dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        line = line[2:] if line.startswith("$ ") else line
        if line and not line.startswith("#"):
            out.append(line)
    return out


def gpufleet_argv(line: str) -> list[str] | None:
    """The arguments after ``gpufleet`` up to the first pipe or redirection; None for another command."""
    words = shlex.split(line, comments=True)
    if not words or words[0] != "gpufleet":
        return None
    argv = []
    for w in words[1:]:
        if w in ("|", "||", "&&", ";", ">", ">>", "&") or w.startswith((">", "2>")):
            break
        argv.append(w)
    return argv


def parse(argv: list[str], where: str) -> None:
    """The command's parser accepts ``argv`` (``--help`` exits 0)."""
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:
        assert e.code == 0, f"{where}: `gpufleet {shlex.join(argv)}` is rejected by the parser (exit {e.code})"


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A working directory laid out like the project root: ../shared is the public data."""
    if not SHARED_DATA.is_dir():
        missing_shared_data(SHARED_DATA)
    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent, target_is_directory=True)
    for name in PROJECT_FOLDERS:
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(work)
    return work


def test_every_block_is_checked_or_says_why_not():
    assert len(ALL_BLOCKS) >= 40 and {"python", "bash", "yaml"} <= {b.lang for b in ALL_BLOCKS}
    unexplained = []
    for b in ALL_BLOCKS:
        if b.not_run is not None:
            if len(b.not_run.split()) < 2:
                unexplained.append(f"{b.where}: `<!-- not run: -->` needs a reason of a few words")
            continue
        if b.lang in ("python", "yaml"):
            continue
        if b.lang in SHELLS and all(gpufleet_argv(c) is not None for c in shell_commands(b.text)):
            continue
        unexplained.append(f"{b.where}: a ```{b.lang} block that is not run needs `<!-- not run: REASON -->` "
                           "on the line before it")
    assert not unexplained, "\n".join(unexplained)


def test_the_collector_reads_markers_and_commands(tmp_path):
    """The collector itself: a marker, an indented block, a continuation, a pipe."""
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- not run: needs a GPU -->\n```bash\nnvidia-smi\n```\n\n"
                    "1. step\n   ```bash\n   gpufleet simulate --format synthetic \\\n"
                    "       --policy las -o wide | less -S   # paged\n   ```\n")
    first, second = blocks_of(page)
    assert (first.line, first.lang, first.not_run) == (3, "bash", "needs a GPU")
    assert second.not_run is None and second.text.startswith("gpufleet simulate")
    (line,) = shell_commands(second.text)
    assert gpufleet_argv(line) == ["simulate", "--format", "synthetic", "--policy", "las", "-o", "wide"]
    assert gpufleet_argv("pip install '.[k8s]'") is None
    with pytest.raises(AssertionError, match="rejected by the parser"):
        parse(["node", "inventory", "|", "run"], "page.md:8")


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "yaml"], ids=_id)
def test_yaml_blocks_parse(block):
    try:
        docs = list(yaml.safe_load_all(block.text))
    except yaml.YAMLError as e:
        pytest.fail(f"{block.where}: not valid YAML: {e}")
    assert any(d is not None for d in docs), f"{block.where}: an empty YAML block"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang in SHELLS], ids=_id)
def test_gpufleet_commands_parse(block):
    """Every gpufleet command line, in marked blocks too, is one the parser accepts."""
    for line in shell_commands(block.text):
        argv = gpufleet_argv(line)
        if argv is not None:
            parse(argv, block.where)


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang in SHELLS and b.not_run is None], ids=_id)
def test_gpufleet_commands_run(block, workdir):
    for line in shell_commands(block.text):
        argv = gpufleet_argv(line)
        if not argv or argv[0] in PARSE_ONLY or "--help" in argv or "-h" in argv:
            continue   # parsed above; --help is parsed there too
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = main(argv)
        assert code == 0, f"{block.where}: `gpufleet {shlex.join(argv)}` exits {code}"
        assert out.getvalue().strip(), f"{block.where}: `gpufleet {shlex.join(argv)}` printed nothing"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "python" and b.not_run is None], ids=_id)
def test_python_blocks_run(block, workdir):
    """In a process of its own: what a snippet registers (a plugin, a trace format) stays there."""
    script = workdir.parent / "snippet.py"
    script.write_text(block.text + "\n")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(script)], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=120)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    assert done.returncode == 0, f"{block.where}: exit {done.returncode}: {last}"
