#!/usr/bin/env bash
# Regenerates api_pb2.py / api_pb2.pyi / api_pb2_grpc.py from api.proto. The generated files are
# committed so the package works without grpcio-tools.
#
# api.proto is the kubelet's device plugin API, copied byte for byte (see README.md here):
#   https://github.com/kubernetes/kubelet  pkg/apis/deviceplugin/v1beta1/api.proto
#   tag v0.36.3 (Kubernetes v1.36.3), commit bbb4f8f0907ace5f317f33e06413a55a5f4636f6
# It imports nothing (upstream dropped its gogoproto options in v0.34.0), so no include path
# beyond this package is needed. To take a newer upstream file, replace api.proto with it
# unchanged, record its source and sha256 in README.md and in the test
# tests/python/test_deviceplugin_proto.py, then run this script.
#
# Generated with grpcio-tools 1.85.1 (protoc 35.1, gencode for protobuf 7.35.1): the generated
# modules refuse to load with a grpcio older than GRPC_GENERATED_VERSION inside api_pb2_grpc.py
# or a protobuf runtime older than the gencode version, so these must not exceed the floors
# grpcio>=1.85.1 and protobuf>=7.35.1 in pyproject.toml.
# Usage: python/gpufleet/k8s/deviceplugin/regenerate.sh [python]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"   # repository root
py="${1:-python}"

# The proto must be the recorded upstream file: edits belong upstream, not here.
want=$(sed -n 's/^- sha256: `\([0-9a-f]\{64\}\)`$/\1/p' "$here/README.md")
have=$(sha256sum "$here/api.proto" | cut -d' ' -f1)
if [ "$want" != "$have" ]; then
  echo "regenerate: api.proto sha256 $have differs from README.md's ${want:-(none)}" >&2
  exit 1
fi

cd "$root/python"
# Include root = python/, so the generated grpc module imports `from gpufleet.k8s.deviceplugin import api_pb2` (a package-absolute import).
"$py" -m grpc_tools.protoc -I . --python_out=. --pyi_out=. --grpc_python_out=. \
  gpufleet/k8s/deviceplugin/api.proto
echo "regenerated in $here"
