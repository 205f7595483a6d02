#!/usr/bin/env bash
# Regenerates python/gpufleet/_core.pyi from the built extension (pybind11-stubgen, from the dev
# extra that setup.sh installs). tests/python/test_stubs.py checks the stub is current.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
.venv/bin/pybind11-stubgen gpufleet._core -o "$out"
cp "$out/gpufleet/_core.pyi" python/gpufleet/_core.pyi
rm -rf "$out"
