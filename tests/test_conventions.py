"""Conventions: the taints and labels are the documented ones and render in each cloud's format."""

from __future__ import annotations

import pytest
from gpupools import conventions as c


def test_gpu_taint_is_the_extended_resource_key_with_a_value() -> None:
    assert str(c.GPU_TAINT) == "nvidia.com/gpu=present:NoSchedule"
    assert c.GPU_TAINT.key == c.GPU_RESOURCE  # ExtendedResourceToleration keys on the resource name


def test_cloud_taints_match_what_the_clouds_write() -> None:
    assert str(c.AKS_SPOT_TAINT) == "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
    assert str(c.AKS_SYSTEM_TAINT) == "CriticalAddonsOnly=true:NoSchedule"
    assert c.TaintEffect.NO_SCHEDULE.eks == "NO_SCHEDULE"
    assert c.TaintEffect.PREFER_NO_SCHEDULE.eks == "PREFER_NO_SCHEDULE"


def test_toleration_is_exact() -> None:
    assert c.GPU_TAINT.toleration() == {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}


def test_pool_labels() -> None:
    gpu = c.pool_labels("t4", c.Role.GPU, c.CapacityType.SPOT)
    assert gpu == {
        "gpupools.io/pool": "t4",
        "gpupools.io/role": "gpu",
        "gpupools.io/capacity-type": "spot",
        "nvidia.com/gpu.present": "true",
    }
    system = c.pool_labels("system", c.Role.SYSTEM, c.CapacityType.ON_DEMAND)
    assert c.GPU_PRESENT_LABEL not in system


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("kubernetes.io/hostname", True),
        ("node-role.kubernetes.io/gpu", True),
        ("k8s.io/x", True),
        ("kubernetes.azure.com/accelerator", True),
        ("eks.amazonaws.com/capacityType", True),
        ("gpupools.io/pool", True),
        ("team", False),
        ("example.com/team", False),
        ("nvidia.com/mig.config", False),
        ("notkubernetes.io/x", False),
    ],
)
def test_reserved_prefixes(key: str, reserved: bool) -> None:
    assert c.is_reserved_key(key) is reserved
