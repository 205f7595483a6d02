#!/usr/bin/env bash
# The node side on a real NVIDIA GPU, in one command, without network:
#   bash tools/verify_gpu.sh [OUTDIR]        (from the repository root; OUTDIR defaults to ./gpu-verification-out)
# Prints the machine (nvidia-smi -L, topo -m, versions), then runs tests/python/test_real_gpu.py
# with -s so every command and its output is in the log, OUTDIR/verify-gpu-<time>.log. Exits with
# pytest's code. What each check means: docs/gpu-verification.md.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-verification-out}
mkdir -p "$out"
log="$out/verify-gpu-$(date -u +%Y%m%dT%H%M%SZ).log"

# .venv when the project was set up here; otherwise the system Python with the checkout's python/
# on the path. The node side needs no compiled extension, but the interpreter needs torch (CUDA),
# nvidia-ml-py and pytest.
if [ -x .venv/bin/python ]; then
  py=.venv/bin/python
else
  py=$(command -v python3 || command -v python)
  export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
fi

{
  echo "== gpufleet node side on a real GPU: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "== commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "== python: $py"
  echo "\$ nvidia-smi -L"; nvidia-smi -L
  echo "\$ nvidia-smi topo -m"; nvidia-smi topo -m
  echo "\$ nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv"
  nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv
  echo "\$ command -v nvidia-cuda-mps-control"; command -v nvidia-cuda-mps-control || echo "(not found)"
  "$py" - <<'EOF'
import importlib
for name in ("torch", "pynvml", "pytest", "gpufleet"):
    try:
        m = importlib.import_module(name)
        print(f"{name}: {getattr(m, '__version__', '?')} from {getattr(m, '__file__', '?')}")
    except Exception as e:
        print(f"{name}: not importable ({e})")
try:
    import torch
    print("torch CUDA:", torch.version.cuda, "available:", torch.cuda.is_available(),
          "devices:", torch.cuda.device_count())
except Exception:
    pass
try:
    import gpufleet
    print("gpufleet native extension:", "not built (node side only)" if gpufleet._core_error else "built")
except Exception:
    pass
EOF
  echo
  echo "\$ $py -m pytest -s -v -rs -p no:cacheprovider tests/python/test_real_gpu.py tests/python/test_gpu_checks.py"
  "$py" -m pytest -s -v -rs -p no:cacheprovider tests/python/test_real_gpu.py tests/python/test_gpu_checks.py
  rc=$?
  echo "== pytest exit code: $rc"
  if [ "$rc" = 0 ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    # The real-GPU checks skipped: a green run here would verify nothing.
    echo "== no GPU on this machine: the real-GPU checks were skipped, nothing was verified"
    rc=2
  fi
  exit "$rc"
} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "log: $log"
exit "$rc"
