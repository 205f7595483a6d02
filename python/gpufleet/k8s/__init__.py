"""Kubernetes adapters: allocation annotations and the kubelet device plugin.

Kept import-free so `import gpufleet.k8s.annotations` never pulls in grpc.
"""
