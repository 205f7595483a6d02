#!/usr/bin/env bash
# Installs whatever is missing for gpufleet on a Debian/Ubuntu machine, and nothing twice:
#   1. system packages (compiler, Abseil, GoogleTest, Google Benchmark, nlohmann-json, COIN-OR CLP)
#      when root;
#   2. a virtual environment in .venv with the Python build dependencies and the extras of
#      GPUFLEET_EXTRAS (space-separated; default every extra, which scripts/test.sh needs;
#      scripts/run.sh asks for "plot" only);
#   3. gpufleet itself, editable, compiled by scikit-build-core (incremental after the first time).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v g++ >/dev/null 2>&1 || need_apt+=(g++ make)
for pkg in libabsl-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev coinor-libclp-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# The fuzz step of scripts/test.sh (GPUFLEET_BUILD_TESTS=ON) needs clang with its libFuzzer and
# sanitizer runtimes; probed by building an empty fuzz target.
if [ "${GPUFLEET_BUILD_TESTS:-OFF}" = ON ]; then
  probe=$(mktemp -d)
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
    > "$probe/probe.cc"
  clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cc" -o "$probe/probe" >/dev/null 2>&1 \
    || need_apt+=(clang libclang-rt-dev)
  rm -rf "$probe"
fi
# A compiler cache is optional (CMakeLists.txt uses it when present): installed only as root.
if ! command -v ccache >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then need_apt+=(ccache); fi
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || need_apt+=(python3-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing system packages: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "setup: missing system packages: ${need_apt[*]}" >&2
    echo "setup: run this script as root, or: sudo apt-get install ${need_apt[*]}" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
PY=.venv/bin/python

# Dependencies are installed again only when pyproject.toml changes or an extra is asked for that
# no earlier install of this pyproject.toml covered (the stamp's name lists the extras it has).
extras=${GPUFLEET_EXTRAS-plot k8s node ray test dev dra}
hash=$(sha1sum pyproject.toml | cut -c1-12)
covered() {
  local s got e
  [ -f .venv/.gpufleet-deps-"$hash" ] && return 0   # the stamp of every extra, before they were chosen
  for s in .venv/.gpufleet-deps-"$hash"-*; do
    [ -f "$s" ] || continue
    got=",${s##*-},"
    for e in $extras; do
      case "$got" in *",$e,"*) ;; *) continue 2 ;; esac
    done
    return 0
  done
  return 1
}
stamp=.venv/.gpufleet-deps-$hash-$(echo $extras | tr ' ' ',')
if ! covered; then
  echo "setup: installing Python dependencies (extras: ${extras:-none})"
  $PY -m pip install -q --upgrade pip
  $PY -m pip install -q "scikit-build-core>=1.1" "pybind11>=3.0" "cmake>=3.24" "ninja>=1.11"
  GPUFLEET_EXTRAS="$extras" $PY - <<'PYEOF' > .venv/requirements.txt
import os, sys, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
deps = list(p["dependencies"])
known = p.get("optional-dependencies", {})
for extra in os.environ["GPUFLEET_EXTRAS"].split():
    if extra not in known:
        sys.exit(f"setup: GPUFLEET_EXTRAS: no extra {extra!r} in pyproject.toml (known: {' '.join(known)})")
    deps += known[extra]
print("\n".join(sorted(set(deps))))
PYEOF
  $PY -m pip install -q -r .venv/requirements.txt
  rm -f .venv/.gpufleet-deps-*
  touch "$stamp"
fi

# GPUFLEET_BUILD_TESTS=ON (set by scripts/test.sh) also builds the GoogleTest binary in the same
# build directory, so the core is compiled once for the module and the tests. Unity batches of 8
# sources halve the compile time on a 2-core machine; GPUFLEET_UNITY_BUILD=OFF compiles each source
# alone, which rebuilds less after an edit and lets a compiler cache share objects between checkouts.
echo "setup: building gpufleet"
PATH="$PWD/.venv/bin:$PATH" $PY -m pip install -q --no-build-isolation --no-deps \
  --config-settings=cmake.define.GPUFLEET_BUILD_TESTS="${GPUFLEET_BUILD_TESTS:-OFF}" \
  --config-settings=cmake.define.CMAKE_UNITY_BUILD="${GPUFLEET_UNITY_BUILD:-ON}" \
  --config-settings=cmake.define.CMAKE_UNITY_BUILD_BATCH_SIZE=8 -e .
$PY -c 'import gpufleet; print("setup: gpufleet", gpufleet.__version__, "ready")'
