#!/usr/bin/env bash
# Regenerates the extension's type stubs, python/gpufleet/_core/*.pyi (a package: __init__.pyi and
# one file per submodule), from the built extension (pybind11-stubgen, from the dev extra that
# setup.sh installs). tests/python/test_stubs.py checks the stubs are current.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
.venv/bin/python -m pybind11_stubgen gpufleet._core -o "$out"
rm -rf python/gpufleet/_core python/gpufleet/_core.pyi
mkdir -p python/gpufleet/_core
cp "$out"/gpufleet/_core/*.pyi python/gpufleet/_core/
rm -rf "$out"
