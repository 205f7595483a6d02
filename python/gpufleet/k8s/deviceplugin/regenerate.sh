#!/usr/bin/env bash
# Regenerates api_pb2.py / api_pb2_grpc.py from api.proto. The generated files are committed so
# the package works without grpcio-tools. Generated with grpcio-tools 1.85.1 / protobuf 7.36.2;
# the generated modules refuse to load with an older grpcio (see GRPC_GENERATED_VERSION inside).
# Usage: python/gpufleet/k8s/deviceplugin/regenerate.sh [python]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"   # repository root
py="${1:-python}"
cd "$root/python"
# Include root = python/, so the generated grpc module imports
# `from gpufleet.k8s.deviceplugin import api_pb2` (a package-absolute import).
"$py" -m grpc_tools.protoc -I . --python_out=. --pyi_out=. --grpc_python_out=. \
  gpufleet/k8s/deviceplugin/api.proto
echo "regenerated in $here"
