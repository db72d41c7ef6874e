"""Invalid stack configs under ``gpupools:provisioner: karpenter``, for the bad-input catalogue.

Each case: (id, full config, the config path the error must name, words of the rule). Every one
must fail with one ``ConfigError`` before anything is registered (``tests/test_bad_input_catalogue.py``).
"""

from __future__ import annotations

from typing import Any

from components.testing import stack_config

KARPENTER = stack_config("aws-karpenter-dev")


def karpenter(**changes: Any) -> dict[str, Any]:
    """The aws-karpenter-dev config with top-level keys replaced (``gpupools:`` prefix added)."""
    return {**KARPENTER, **{f"gpupools:{k}": v for k, v in changes.items()}}


def with_pool(index: int, **changes: Any) -> dict[str, Any]:
    pools = [dict(p) for p in KARPENTER["gpupools:gpuPools"]]
    pools[index].update(changes)
    return karpenter(gpuPools=pools)


def with_cpu_pool(**changes: Any) -> dict[str, Any]:
    pools = [dict(p) for p in KARPENTER["gpupools:cpuPools"]]
    pools[0].update(changes)
    return karpenter(cpuPools=pools)


KARPENTER_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("karpenter-provisioner-typo", karpenter(provisioner="karpentr"), "gpupools:provisioner", "did you mean 'karpenter'"),
    (
        "karpenter-on-azure",
        {**stack_config("azure-dev"), "gpupools:provisioner": "karpenter"},
        "gpupools:provisioner",
        "Node Auto Provisioning",
    ),
    ("karpenter-on-demand-max", with_pool(0, onDemandMaxSize=3), "gpupools:gpuPools[0].onDemandMaxSize", "no meaning"),
    ("karpenter-min-size", with_pool(1, minSize=1), "gpupools:gpuPools[1].minSize", "keeps no minimum"),
    ("karpenter-cpu-min-size", with_cpu_pool(minSize=2), "gpupools:cpuPools[0].minSize", "keeps no minimum"),
    (
        "karpenter-provision-time",
        karpenter(autoscaler={"maxNodeProvisionTime": "10m", "scaleDownUnneededTime": "10m"}),
        "gpupools:autoscaler.maxNodeProvisionTime",
        "no provision timeout",
    ),
    (
        "karpenter-reserved-label",
        with_pool(0, labels={"karpenter.sh/team": "vision"}),
        "gpupools:gpuPools[0].labels.karpenter.sh/team",
        "Karpenter reserves",
    ),
    (
        "karpenter-unneeded-seconds",
        karpenter(autoscaler={"scaleDownUnneededTime": "90s"}),
        "gpupools:autoscaler.scaleDownUnneededTime",
        "whole minutes",
    ),
    (
        "karpenter-fallback-without-spot",
        with_pool(0, spot=False, onDemandFallback=True),
        "gpupools:gpuPools[0].onDemandFallback",
        "already on-demand",
    ),
]
