#!/usr/bin/env bash
# The Python test suite against the oldest supported dependencies (tests/min-versions.txt, the
# floors in pyproject.toml): the wheel from scripts/release.sh is installed with --no-deps into
# .venv-min, the dependencies of the plot, k8s, node and test extras are installed constrained to
# those floors, and pytest runs there. The environment is rebuilt only when the pins change.
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(ls dist/gpufleet-*manylinux*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "min-versions: no wheel in dist/; run scripts/release.sh first" >&2; exit 1; }
stamp=.venv-min/.pins-$(cat tests/min-versions.txt pyproject.toml | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
  echo "min-versions: creating .venv-min"
  rm -rf .venv-min
  python3 -m venv .venv-min
  .venv/bin/python - <<'PYEOF' > .venv-min/requirements.txt
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
deps = list(p["dependencies"])
for extra in ("plot", "k8s", "node", "test", "dra"):
    deps += p["optional-dependencies"][extra]
print("\n".join(sorted(set(deps))))
PYEOF
  .venv-min/bin/pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  .venv-min/bin/pip install -q -c tests/min-versions.txt -r .venv-min/requirements.txt 2>&1 \
    | grep -v '^WARNING: Location' || true
  touch "$stamp"
fi
.venv-min/bin/pip install -q --force-reinstall --no-deps "$wheel" 2>&1 | grep -v '^WARNING: Location' || true
# Every pin is what is installed (a resolver that quietly chose another version proves nothing).
.venv-min/bin/python - <<'PYEOF'
from importlib.metadata import version
pins = [l.split("==") for l in open("tests/min-versions.txt") if "==" in l and not l.startswith("#")]
wrong = [f"{n} {version(n)} (pinned {v.strip()})" for n, v in pins if version(n) != v.strip()]
if wrong:
    raise SystemExit("min-versions: installed versions differ from the pins: " + ", ".join(wrong))
print("min-versions: " + ", ".join(f"{n} {v.strip()}" for n, v in pins))
PYEOF
# From outside the checkout, so `gpufleet` is the installed wheel, not python/gpufleet.
cd tests/python && MPLBACKEND=Agg ../../.venv-min/bin/python -m pytest -q -p no:cacheprovider .
