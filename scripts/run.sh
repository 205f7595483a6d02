#!/usr/bin/env bash
# The main job: set up if needed, then the quickstart (place whole and shared GPU pods on a small
# cluster) and, when present, the policy comparison on a synthetic trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
.venv/bin/python examples/quickstart.py
if [ -f examples/compare_policies.py ]; then
  MPLBACKEND=Agg .venv/bin/python examples/compare_policies.py --out out/compare_policies.png
fi
