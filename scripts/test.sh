#!/usr/bin/env bash
# Every test: GoogleTest through ctest (a normal build and an AddressSanitizer + UBSan build),
# then pytest over the Python API, the CLI, the services and every notebook.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)

run_ctest() {  # $1 build dir, rest: extra cmake args
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DGPUFLEET_BUILD_TESTS=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

echo "== C++ tests (Release)"
run_ctest build/cpp -DCMAKE_BUILD_TYPE=Release
echo "== C++ tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest build/asan -DCMAKE_BUILD_TYPE=Debug -DGPUFLEET_SANITIZE=ON -DCMAKE_CXX_FLAGS=-O1

echo "== Python tests and notebooks"
MPLBACKEND=Agg .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
