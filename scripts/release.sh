#!/usr/bin/env bash
# Builds what a release publishes and proves the wheel stands alone:
#   1. the wheel, from the same build directory and settings as scripts/setup.sh (incremental);
#   2. auditwheel repair: Abseil and anything else outside the manylinux set is copied into the
#      wheel (gpufleet.libs/), which is tagged manylinux_2_X for the glibc it was built against;
#   3. a check of every shared library the repaired wheel's binaries need: bundled, or on the
#      manylinux list (libc, libm, libstdc++, libgcc_s, ...), nothing else;
#   4. the sdist, with a check that it holds the sources a build needs;
#   5. a fresh virtual environment outside the repository, the wheel installed there from the
#      registry's dependencies, the quickstart run, and a check that the Abseil and COIN-OR CLP
#      libraries the process loaded are the wheel's own copies.
# Output in dist/. scripts/test.sh runs it; docs/release.md has the release steps around it.
set -euo pipefail
cd "$(dirname "$0")/.."
# auditwheel comes with the dev extra, which a .venv set up by scripts/run.sh (plot only) lacks.
[ -x .venv/bin/auditwheel ] || bash scripts/setup.sh
PY="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
rm -rf dist && mkdir -p dist/raw

echo "release: wheel"
"$PY" -m pip wheel -q --no-build-isolation --no-deps -w dist/raw \
  --config-settings=cmake.define.GPUFLEET_BUILD_TESTS="${GPUFLEET_BUILD_TESTS:-OFF}" \
  --config-settings=cmake.define.CMAKE_UNITY_BUILD=ON \
  --config-settings=cmake.define.CMAKE_UNITY_BUILD_BATCH_SIZE=8 . 2>&1 | grep -v '^WARNING: Location' || true
raw=$(ls dist/raw/gpufleet-*.whl)

echo "release: auditwheel repair"
auditwheel repair -w dist "$raw" 2>&1 | grep -E 'Fixed-up wheel|tags' || true
wheel=$(ls dist/gpufleet-*manylinux*.whl)
echo "release: $(basename "$wheel")"

echo "release: shared libraries the wheel needs"
"$PY" - "$wheel" <<'PYEOF'
import re, subprocess, sys, tempfile, zipfile
from pathlib import Path
# The libraries every manylinux system provides (PEP 600 and auditwheel's policy).
# libz.so.1 is on auditwheel's list for every manylinux tag (so repair never bundles it); COIN-OR
# CoinUtils needs it.
ALLOWED = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0",
           "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2", "libutil.so.1", "libresolv.so.2",
           "libz.so.1"}
wheel = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    zipfile.ZipFile(wheel).extractall(tmp)
    objects = [p for p in Path(tmp).rglob("*.so*") if p.is_file()]
    bundled = {p.name for p in objects}
    bad = []
    for p in objects:
        dyn = subprocess.run(["readelf", "-d", str(p)], capture_output=True, text=True, check=True).stdout
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
            if lib not in ALLOWED and lib not in bundled:
                bad.append(f"{p.relative_to(tmp)} needs {lib}")
if bad:
    sys.exit("release: the wheel needs libraries outside it and outside manylinux:\n" + "\n".join(bad))
print(f"release: {len(objects)} shared objects, every dependency bundled or on the manylinux list")
PYEOF

echo "release: sdist"
"$PY" - <<'PYEOF'
import tarfile
from pathlib import Path
from scikit_build_core.build import build_sdist
name = build_sdist("dist")
members = set(tarfile.open(Path("dist") / name).getnames())
root = name[: -len(".tar.gz")]
need = ["pyproject.toml", "CMakeLists.txt", "cpp/gpufleet/core/registry.h", "cpp/bindings/module.cc",
        "python/gpufleet/__init__.py", "README.md"]
missing = [n for n in need if f"{root}/{n}" not in members]
if missing:
    raise SystemExit(f"release: the sdist lacks {missing}")
print(f"release: {name} ({len(members)} files)")
PYEOF

echo "release: install into a fresh environment and run the quickstart"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q "$wheel" 2>&1 | grep -v '^WARNING: Location' || true
cp -r examples/quickstart.py examples/scenarios "$scratch/"
(cd "$scratch" && "$scratch/venv/bin/python" quickstart.py > quickstart.out)
grep -q "0/3 nodes are available" "$scratch/quickstart.out"
(cd "$scratch" && "$scratch/venv/bin/python" - <<'PYEOF'
import gpufleet
from pathlib import Path
maps = Path("/proc/self/maps").read_text().split("\n")
absl = sorted({line.split()[-1] for line in maps if "libabsl" in line})
outside = [p for p in absl if "gpufleet.libs" not in p]
assert absl and not outside, f"Abseil loaded from outside the wheel: {outside}"
coin = sorted({line.split()[-1] for line in maps if "libClp" in line or "libCoinUtils" in line})
outside = [p for p in coin if "gpufleet.libs" not in p]
assert len(coin) == 2 and not outside, f"COIN-OR CLP loaded from outside the wheel: {coin}"
assert "site-packages" in gpufleet.__file__ and "/python/gpufleet" not in gpufleet.__file__
print(f"release: quickstart ran from {Path(gpufleet.__file__).parent}, "
      f"{len(absl)} Abseil and {len(coin)} COIN-OR libraries from the wheel")
PYEOF
)
