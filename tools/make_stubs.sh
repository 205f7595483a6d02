#!/usr/bin/env bash
# Regenerates the extension's type stubs, python/gpufleet/_core/*.pyi (a package: __init__.pyi and
# one file per submodule), from the built extension (pybind11-stubgen, from the dev extra that
# setup.sh installs), then gives them the types the extension's signatures cannot state
# (tools/stub_types.py: the engine's results). tests/python/test_stubs.py checks the stubs are
# current; tests/python/test_typing.py type-checks code against them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
.venv/bin/python -m pybind11_stubgen gpufleet._core -o "$out"
rm -rf python/gpufleet/_core python/gpufleet/_core.pyi
mkdir -p python/gpufleet/_core
cp "$out"/gpufleet/_core/*.pyi python/gpufleet/_core/
rm -rf "$out"
.venv/bin/python tools/stub_types.py python/gpufleet/_core
