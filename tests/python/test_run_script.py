"""scripts/run.sh, the main job: a line per stage with the elapsed seconds, set-up asked for the
plot extra only, outputs under the ignored out/ folder and the figure's path at the end; and the
policy comparison it runs prints tables that fit the width asked for."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Stand-ins that record how run.sh calls them (the real set-up would compile the core).
SETUP = 'echo "setup: GPUFLEET_EXTRAS=[$GPUFLEET_EXTRAS]"\n'
QUICKSTART = 'print("quickstart ran")\n'
COMPARE = ("import sys\nout = sys.argv[sys.argv.index('--out') + 1]\nopen(out, 'wb').write(b'png')\n"
           "print('compare', ' '.join(sys.argv[1:]))\n")


@pytest.fixture
def tree(tmp_path) -> Path:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    (tmp_path / "scripts" / "setup.sh").write_text(SETUP)
    (tmp_path / "examples" / "quickstart.py").write_text(QUICKSTART)
    (tmp_path / "examples" / "compare_policies.py").write_text(COMPARE)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    return tmp_path


def _run(tree: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("GPUFLEET_EXTRAS", "OUT")}
    return subprocess.run(["bash", str(tree / "scripts" / "run.sh")], capture_output=True, text=True,
                          env={**clean, **env}, timeout=60)


def test_run_shows_each_stage_installs_the_plot_extra_and_names_the_figure(tree):
    res = _run(tree)
    assert res.returncode == 0, res.stderr
    stages = re.findall(r"^== run: (\S+).* \(at (\d+)s\)$", res.stderr, re.M)
    assert [s for s, _ in stages] == ["set-up:", "quickstart:", "policy", "done"], res.stderr
    assert [int(t) for _, t in stages] == sorted(int(t) for _, t in stages)
    assert "setup: GPUFLEET_EXTRAS=[plot]" in res.stderr   # set-up's own output stays visible
    assert "compare --out out/compare_policies.png --width 100" in res.stdout
    figure = tree / "out" / "compare_policies.png"
    assert res.stdout.rstrip().splitlines()[-1] == f"figure: {figure}"
    assert figure.read_bytes() == b"png"
    assert "/out/" in (ROOT / ".gitignore").read_text().split()


def test_run_keeps_extras_and_output_folder_given(tree):
    res = _run(tree, GPUFLEET_EXTRAS="plot k8s", OUT=str(tree / "demo"))
    assert res.returncode == 0, res.stderr
    assert "setup: GPUFLEET_EXTRAS=[plot k8s]" in res.stderr
    assert res.stdout.rstrip().splitlines()[-1] == f"figure: {tree / 'demo' / 'compare_policies.png'}"


def test_run_stops_at_a_failed_stage(tree):
    (tree / "examples" / "quickstart.py").write_text("raise SystemExit(3)\n")
    res = _run(tree)
    assert res.returncode == 3
    assert "policy comparison" not in res.stderr and "figure:" not in res.stdout


@pytest.mark.parametrize("width", [100, 70])
def test_policy_comparison_tables_fit_the_width(tmp_path, width):
    pytest.importorskip("matplotlib", reason="the plot extra draws the comparison's figure")
    out = tmp_path / "fig.png"
    res = subprocess.run([sys.executable, str(ROOT / "examples" / "compare_policies.py"), "--out", str(out),
                          "--jobs", "60", "--seeds", "2", "--width", str(width)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    names = ("policy", "fifo", "srtf", "las", "dlas-gpu", "hetero-las(aware=false)", "hetero-las", "gavel-maxmin")
    rows = [line for line in lines if line.split(" ")[0] in names]
    assert len(rows) > 8 and max(len(line) for line in rows) <= width, res.stdout
    assert max(len(line) for line in lines[:2]) <= 100   # the two lines above the tables
    headers = [line for line in lines if line.startswith("policy ")]
    shown = [name for line in headers for name in line.split()[1:]]
    assert shown == ["avg_jct", "p50_jct", "p99_jct", "avg_queueing_delay", "makespan", "preemptions",
                     "migrations", "gpu_utilization", "finish_time_fairness"]   # each metric once
    assert all(sum(line.startswith(p + " ") for line in lines) == len(headers)
               for p in ("fifo", "dlas-gpu", "gavel-maxmin"))
    assert out.stat().st_size > 0
