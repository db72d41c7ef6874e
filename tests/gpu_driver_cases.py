"""Invalid ``gpuPools[].gpuDriver`` configs, for ``tests/test_gpu_driver.py`` and the bad-input catalogue.

Each case: (id, full config, the config path the error must name, words of the rule). Every one
fails with one ``ConfigError`` before anything is registered.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpupools.testing import stack_config


def azure() -> dict[str, Any]:
    return stack_config("azure-dev")


def aws() -> dict[str, Any]:
    return stack_config("aws-dev")


def with_pools(raw: Mapping[str, Any], *changes: Mapping[str, Any], cpu: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``raw`` with ``changes[i]`` merged into ``gpuPools[i]`` (a ``None`` value removes the key)."""
    pools = [dict(p) for p in raw["gpupools:gpuPools"]]
    for index, change in enumerate(changes):
        pools[index].update(change)
        pools[index] = {k: v for k, v in pools[index].items() if v is not None}
    result = {**raw, "gpupools:gpuPools": pools}
    if cpu is not None:
        result["gpupools:cpuPools"] = [{**raw["gpupools:cpuPools"][0], **cpu}]
    return result


MANAGED = {"gpuDriver": "managed"}
NONE = {"gpuDriver": "none"}
NO_SHARING = {"sharing": None}
BOTTLEROCKET = {"amiType": "BOTTLEROCKET_x86_64_NVIDIA"}
MIG = {"sharing": {"mig": {"profile": "MIG1g"}}}

GPU_DRIVER_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("managed-aks", with_pools(azure(), MANAGED), "gpupools:gpuPools[0].gpuDriver", "do not support the cluster autoscaler"),
    (
        "managed-nap",
        with_pools(stack_config("azure-nap-dev"), MANAGED),
        "gpupools:gpuPools[0].gpuDriver",
        "gpu.mode Driver or None only",
    ),
    ("managed-eks", with_pools(aws(), {**MANAGED, **NO_SHARING}), "gpupools:gpuPools[0].gpuDriver", "is AKS only"),
    (
        "managed-eks-karpenter",
        with_pools(stack_config("aws-karpenter-dev"), {**MANAGED, **NO_SHARING}),
        "gpupools:gpuPools[0].gpuDriver",
        "is AKS only",
    ),
    ("none-time-slicing", with_pools(aws(), NONE), "gpupools:gpuPools[0].sharing", "needs gpuDriver install"),
    (
        "none-mps-karpenter",
        with_pools(stack_config("aws-karpenter-dev"), {**NONE, "sharing": {"mps": {"replicas": 2}}}),
        "gpupools:gpuPools[0].sharing",
        "needs gpuDriver install",
    ),
    ("none-mig", with_pools(azure(), {}, {**NONE, **MIG}), "gpupools:gpuPools[1].sharing", "needs gpuDriver install"),
    (
        "none-bottlerocket",
        with_pools(aws(), {**NONE, **NO_SHARING, **BOTTLEROCKET}),
        "gpupools:gpuPools[0].gpuDriver",
        "must not be none on a Bottlerocket NVIDIA pool",
    ),
    ("unknown", with_pools(azure(), {"gpuDriver": "nvidia"}), "gpupools:gpuPools[0].gpuDriver", "must be one of install"),
    ("cpu-pool", with_pools(azure(), cpu=NONE), "gpupools:cpuPools[0].gpuDriver", "is for GPU pools only"),
]
