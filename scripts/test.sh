#!/usr/bin/env bash
# Every test: GoogleTest through ctest (a normal build and an AddressSanitizer + UBSan build), the
# concurrency tests under ThreadSanitizer, then pytest over the Python API, the CLI, the services
# and every notebook, and last the release artefacts (scripts/release.sh: a portable wheel that
# installs and runs in a fresh environment, and the sdist).
set -euo pipefail
cd "$(dirname "$0")/.."
GPUFLEET_BUILD_TESTS=ON bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)
# Each step says when it starts (seconds since the start), so a slow step shows in the log.
step() { echo "== $* (at ${SECONDS}s)"; }

step "C++ tests (Release, the build the Python module comes from)"
ctest --test-dir build/py --output-on-failure -j "$jobs"

step "C++ tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
cmake -S . -B build/asan -G Ninja -DGPUFLEET_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug \
  -DGPUFLEET_SANITIZE=ON -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >/dev/null
cmake --build build/asan -j "$jobs" --target gpufleet_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

step "C++ concurrency tests (ThreadSanitizer; the core and tests/cpp/concurrency_test.cc only)"
cmake -S . -B build/tsan -G Ninja -DGPUFLEET_TSAN=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build build/tsan -j "$jobs" --target gpufleet_concurrency_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build/tsan/gpufleet_concurrency_tests

step "Fuzz targets (libFuzzer + ASan/UBSan, clang, build/fuzz; 60 s of fuzzing in total)"
FUZZ_SECONDS=60 bash tests/fuzz/run_fuzzers.sh

step "Python tests and notebooks"
MPLBACKEND=Agg .venv/bin/python -m pytest -q -p no:cacheprovider --durations=12 tests/python

step "Release artefacts (portable wheel, sdist, install into a fresh environment)"
GPUFLEET_BUILD_TESTS=ON bash scripts/release.sh

step "Python tests against the oldest supported dependencies (tests/min-versions.txt)"
bash scripts/min_versions.sh

echo "== all tests passed in ${SECONDS}s"
