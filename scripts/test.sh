#!/usr/bin/env bash
# Every test: GoogleTest through ctest (a normal build, and a clang AddressSanitizer + UBSan build
# that also serves the fuzz targets), the concurrency tests under ThreadSanitizer, then pytest over
# the Python API, the CLI, the services and every notebook, and last the release artefacts
# (scripts/release.sh: a portable wheel that installs and runs in a fresh environment, and the
# sdist).
set -euo pipefail
cd "$(dirname "$0")/.."
GPUFLEET_BUILD_TESTS=ON bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
jobs=$(nproc 2>/dev/null || echo 2)
# Each step says when it starts (seconds since the start), so a slow step shows in the log.
step() { echo "== $* (at ${SECONDS}s)"; }

step "C++ tests (Release, the build the Python module comes from)"
ctest --test-dir build/py --output-on-failure -j "$jobs"

step "C++ tests (clang, AddressSanitizer + UndefinedBehaviorSanitizer, build/asan)"
# One clang build serves the sanitizer tests and the fuzzers: the core is compiled once, with
# ASan+UBSan and libFuzzer's coverage hooks, and both the GoogleTest program and every fuzz target
# link it. (Two builds of the core, one per compiler, cost about five minutes more on two cores.)
cmake -S . -B build/asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGPUFLEET_BUILD_TESTS=ON \
  -DGPUFLEET_BUILD_FUZZERS=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >/dev/null
cmake --build build/asan -j "$jobs" --target gpufleet_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

step "C++ concurrency tests (ThreadSanitizer; the core and tests/cpp/concurrency_test.cc only)"
cmake -S . -B build/tsan -G Ninja -DGPUFLEET_TSAN=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build build/tsan -j "$jobs" --target gpufleet_concurrency_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build/tsan/gpufleet_concurrency_tests

step "Fuzz targets (libFuzzer, in the same build/asan; 60 s of fuzzing in total)"
FUZZ_BUILD=build/asan FUZZ_SECONDS=60 bash tests/fuzz/run_fuzzers.sh

step "Python tests and notebooks"
MPLBACKEND=Agg .venv/bin/python -m pytest -q -p no:cacheprovider --durations=12 tests/python

step "Release artefacts (portable wheel, sdist, install into a fresh environment)"
GPUFLEET_BUILD_TESTS=ON bash scripts/release.sh

step "Python tests against the oldest supported dependencies (tests/min-versions.txt)"
bash scripts/min_versions.sh

echo "== all tests passed in ${SECONDS}s"
