"""Pinned upstream versions: Kubernetes, cluster-autoscaler, the NVIDIA device plugin, the smoke test.

Everything here is a pin, not a range, so the same config always deploys the same bits. Bump them
deliberately, in a pull request whose synth diff shows what changes.
"""

from __future__ import annotations

DEFAULT_KUBERNETES_VERSION = "1.34"
"""Default ``gpupools:cluster.kubernetesVersion``: a minor that AKS and EKS both support in
standard support and that has a cluster-autoscaler release of the same minor."""

SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.32", "1.33", "1.34", "1.35")
"""Minors gpupools accepts. Each must have an entry in ``CLUSTER_AUTOSCALER_IMAGE_TAGS``
(cluster-autoscaler supports only the Kubernetes minor it was built for)."""

CLUSTER_AUTOSCALER_IMAGE_TAGS: dict[str, str] = {
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
}
"""registry.k8s.io/autoscaling/cluster-autoscaler tag per Kubernetes minor (kubernetes/autoscaler
releases; the image's minor must match the cluster's): the latest patch of each minor as of the
``cluster-autoscaler-1.3x.y`` release tags of July 2026 (1.33.6, 1.34.5 and 1.35.2 were tagged
2026-07-22, 1.32.7 2026-02-13)."""

CLUSTER_AUTOSCALER_CHART = "cluster-autoscaler"
CLUSTER_AUTOSCALER_CHART_VERSION = "9.59.0"
CLUSTER_AUTOSCALER_CHART_REPO = "https://kubernetes.github.io/autoscaler"
"""The official chart (kubernetes/autoscaler ``charts/cluster-autoscaler``), pinned."""

DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"
DEFAULT_DEVICE_PLUGIN_VERSION = "v0.20.0"
"""NVIDIA/k8s-device-plugin v0.20.0 (2026-08-19), the current release."""

SMOKE_TEST_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
"""The CUDA vector-add sample NVIDIA's device-plugin and GPU Operator docs use; CUDA 12.5 runs on
every driver that AKS and the EKS NVIDIA AMIs ship (>= 525 via minor-version compatibility)."""


def minor(version: str) -> str:
    """``"1.34.2"`` -> ``"1.34"``."""
    return ".".join(version.split(".")[:2])
