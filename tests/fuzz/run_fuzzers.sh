#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, build/fuzz) and runs each for a bounded time,
# starting from its seed corpus in tests/fuzz/corpus/<name>. Any crash, sanitizer report, timeout
# or invariant failure fails the script. New corpus entries and crash reproducers go to
# build/fuzz/{corpus,crashes}/<name>, never into the repository.
#   FUZZ_SECONDS   total time over all targets (default 60), split evenly
#   FUZZ_TARGETS   space-separated subset of targets (default: every tests/fuzz/*_fuzz.cc)
#   FUZZ_BUILD     build directory (default build/fuzz); scripts/test.sh passes build/asan, whose
#                  clang sanitizer build of the core also serves the GoogleTest program
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=$(nproc 2>/dev/null || echo 2)
build=${FUZZ_BUILD:-build/fuzz}

cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DGPUFLEET_BUILD_FUZZERS=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >/dev/null
targets=${FUZZ_TARGETS:-$(cd tests/fuzz && ls *_fuzz.cc | sed 's/_fuzz\.cc$//')}
cmake --build "$build" -j "$jobs" --target $(for t in $targets; do echo "${t}_fuzz"; done)

set -- $targets
per_target=$(( ${FUZZ_SECONDS:-60} / $# ))
[ "$per_target" -ge 1 ] || per_target=1
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for t in $targets; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  echo "== fuzz $t (${per_target}s)"
  # Every seed once, whole (regression inputs may be longer than -max_len below).
  if ! "$build/${t}_fuzz" -timeout=10 -rss_limit_mb=2048 tests/fuzz/corpus/"$t"/* \
      >"$build/$t.seeds.log" 2>&1; then
    tail -n 40 "$build/$t.seeds.log"
    failed+=("$t (seeds)")
    continue
  fi
  # The first corpus directory receives new inputs; the seeds are read only. -timeout is per
  # input, -rss_limit_mb per process.
  if ! "$build/${t}_fuzz" "$corpus" "tests/fuzz/corpus/$t" \
      -max_total_time="$per_target" -dict=tests/fuzz/gpufleet.dict -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
      -artifact_prefix="$crashes/" -print_final_stats=1 >"$build/$t.log" 2>&1; then
    tail -n 40 "$build/$t.log"
    failed+=("$t")
  else
    grep -E "^(stat::number_of_executed_units|stat::new_units_added)" "$build/$t.log" | tr '\n' ' '
    echo
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]} (reproducers in $build/crashes)" >&2
  exit 1
fi
echo "fuzz: all targets ran ${per_target}s each without a finding"
