"""The Containerfile (no container engine here: its text is parsed) and the ignore files that
decide what the build may see."""
from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPILERS = re.compile(r"^(gcc|g\+\+|cpp|clang.*|make|cmake|ninja.*|build-essential|.*-dev|"
                       r"patchelf|auditwheel|scikit-build-core|pybind11)([<>=].*)?$")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):   # a comment inside a continued instruction
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    return out


def stages() -> list[dict]:
    """Each FROM starts a stage: {"base", "name", "steps": [(INSTRUCTION, arguments)]}."""
    out: list[dict] = []
    for word, rest in instructions((ROOT / "Containerfile").read_text()):
        if word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            out.append({"base": parts[0], "name": name, "steps": []})
        else:
            assert out, f"{word} before the first FROM"
            out[-1]["steps"].append((word, rest))
    return out


def installed(stage: dict) -> list[str]:
    """Packages the stage's RUN lines install with apt-get or pip."""
    pkgs = []
    for word, rest in stage["steps"]:
        if word != "RUN":
            continue
        for command in re.split(r"&&|;", rest):
            tokens = shlex.split(command.replace("$(", "(").replace(")", ""))
            for tool in ("apt-get", "pip"):
                if tool in " ".join(tokens[:3]) or any(t.endswith("/" + tool) for t in tokens[:2]):
                    if "install" in tokens:
                        pkgs += [t for t in tokens[tokens.index("install") + 1:] if not t.startswith("-")]
    return pkgs


def test_two_stages_and_the_last_has_no_compiler():
    build, final = stages()
    assert build["name"] == "build" and final["name"] is None
    assert build["base"] == final["base"], "the wheel runs against the glibc it was built on"
    # The build stage compiles the wheel and makes it self-contained.
    runs = " ".join(rest for word, rest in build["steps"] if word == "RUN")
    assert "pip wheel" in runs and "auditwheel repair" in runs
    assert {"g++", "libabsl-dev", "nlohmann-json3-dev", "coinor-libclp-dev"} <= set(installed(build))
    # The same C++ libraries scripts/setup.sh installs, less the ones only its tests need.
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    libs = set(re.search(r"for pkg in ([^;]+); do", setup).group(1).split())
    assert libs - {"libgtest-dev", "libbenchmark-dev"} <= set(installed(build))
    # The final stage: Python and the wheel, nothing that compiles.
    final_pkgs = installed(final)
    assert final_pkgs, "the final stage installs Python and the wheel"
    assert [p for p in final_pkgs if COMPILERS.match(p)] == []
    assert not [rest for word, rest in final["steps"] if word in ("COPY", "ADD")
                and "--from=build" not in rest], "the final stage copies no sources"


def test_the_final_stage_installs_the_wheel_with_the_k8s_and_node_extras_only():
    _, final = stages()
    (wheel,) = [p for p in installed(final) if ".whl" in p]
    extras = set(re.search(r"\[([^\]]+)\]$", wheel).group(1).split(","))
    assert extras == {"k8s", "node"}
    known = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras <= set(known)
    mounts = [rest for word, rest in final["steps"] if word == "RUN" and "--mount=type=bind,from=build" in rest]
    assert len(mounts) == 1, "the wheel comes from the build stage"


def test_the_image_runs_as_an_unprivileged_numeric_user():
    _, final = stages()
    users = [rest for word, rest in final["steps"] if word == "USER"]
    assert users, "no USER: the image would run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "runAsNonRoot can only verify a numeric user"
    assert final["steps"][-1] == ("ENTRYPOINT", '["gpufleet"]')
    # The chart runs its extender pod as that user.
    chart = (ROOT / "deploy" / "helm" / "gpufleet" / "templates" / "scheduler-deployment.yaml").read_text()
    assert f"runAsUser: {uid}" in chart


# ---- the ignore files ----------------------------------------------------------------------------
def rules() -> list[tuple[bool, re.Pattern]]:
    """(exception, pattern) of .containerignore, in order; Docker's syntax: '*' within one path
    element, '**' across them, '!' re-includes, the last match wins."""
    out = []
    for line in (ROOT / ".containerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        rx = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                rx, i = rx + "(.*/)?", i + 3
            elif pattern.startswith("**", i):
                rx, i = rx + ".*", i + 2
            elif pattern[i] == "*":
                rx, i = rx + "[^/]*", i + 1
            elif pattern[i] == "?":
                rx, i = rx + "[^/]", i + 1
            else:
                rx, i = rx + re.escape(pattern[i]), i + 1
        out.append((negate, re.compile(rx + r"\Z")))
    return out


def ignored(path: str) -> bool:
    """Whether the build context leaves `path` out (a path or one of its folders matches)."""
    parts = path.split("/")
    out = False
    for negate, rx in rules():
        if any(rx.match("/".join(parts[:i])) for i in range(1, len(parts) + 1)):
            out = not negate
    return out


def test_the_ignore_files_are_one_list():
    assert (ROOT / ".dockerignore").read_text() == (ROOT / ".containerignore").read_text()


def test_the_build_sees_the_wheels_sources_and_nothing_big():
    for path in (".venv/bin/python", ".venv/lib/python3.11/site-packages/numpy/__init__.py",
                 "build/py/CMakeCache.txt", ".git/HEAD", "dist/gpufleet-0.1.0.whl",
                 "results/run.csv", "out/figure.png", "tests/python/test_cli.py",
                 "notebooks/tour.ipynb", ".hypothesis/examples/x", "benchmarks/results.csv",
                 "python/gpufleet/__pycache__/cli.cpython-311.pyc",
                 "python/gpufleet/_core.cpython-311-x86_64-linux-gnu.so",   # a local build's
                 "cpp/gpufleet/engine/__pycache__/x.pyc"):
        assert ignored(path), path
    # Every folder at the top of this checkout but the two the wheel is built from stays out.
    for entry in ROOT.iterdir():
        if entry.name not in ("cpp", "python"):
            assert ignored(entry.name) == (entry.name not in ("CMakeLists.txt", "pyproject.toml",
                                                              "README.md")), entry.name
    # What the wheel needs: CMake's sources, the package, pyproject's readme.
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"]
    tracked = subprocess.run(["git", "ls-files", "cpp", "python", "CMakeLists.txt", "pyproject.toml",
                              readme], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert len(tracked) > 100
    assert [p for p in tracked if ignored(p)] == []
