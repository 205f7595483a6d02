#!/usr/bin/env bash
# The main job: set up if needed, then the quickstart (place whole and shared GPU pods on a small
# cluster) and, when present, the policy comparison on a synthetic trace.
#
# Each stage prints one line with the seconds since the start; set-up's own lines stay visible.
# Only what the main job needs is installed (the core and the plot extra); scripts/test.sh
# installs the other extras when it runs. Outputs go to out/ (ignored by git), OUT to change it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out}
stage() { echo "== run: $* (at ${SECONDS}s)" >&2; }

stage "set-up: system packages, .venv with the plot extra, the native core (the first build compiles for minutes)"
GPUFLEET_EXTRAS=${GPUFLEET_EXTRAS-plot} bash scripts/setup.sh >&2

stage "quickstart: whole and shared GPUs placed on a small cluster"
.venv/bin/python examples/quickstart.py

if [ -f examples/compare_policies.py ]; then
  stage "policy comparison: 7 job-time policies x 5 seeds on a synthetic trace"
  mkdir -p "$out"
  MPLBACKEND=Agg .venv/bin/python examples/compare_policies.py --out "$out/compare_policies.png" --width 100
  figure=$(cd "$out" && pwd)/compare_policies.png
fi

stage "done"
if [ -n "${figure:-}" ]; then
  echo "figure: $figure"
fi
