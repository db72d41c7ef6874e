"""Multi-node training (issue 21 item 2): EFA pools on EKS, proximity placement on AKS.

Configs shared by ``tests/test_multi_node.py`` and the bad-input catalogue: each invalid case is
(id, full config, the config path the error must name, words of the rule), and must fail with one
``ConfigError`` before anything is registered.
"""

from __future__ import annotations

from typing import Any

from gpupools.testing import stack_config

AWS = stack_config("aws-dev")
KARPENTER = stack_config("aws-karpenter-dev")
AZURE = stack_config("azure-dev")

AWS_ZONE = AWS["gpupools:cluster"]["zones"][0]


def with_pool(config: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    """``config`` with ``gpuPools[index]`` updated by ``changes``."""
    pools = [dict(p) for p in config["gpupools:gpuPools"]]
    pools[index].update(changes)
    return {**config, "gpupools:gpuPools": pools}


def efa_overrides(instance_types: list[str] | None = None, **changes: Any) -> dict[str, Any]:
    """``run_stack("aws-dev", overrides=...)``: the second pool (``gpu4``, tainted
    ``dedicated=training``) as an EFA pool in one zone."""
    pool = {"efa": True, "zones": [AWS_ZONE], **changes}
    if instance_types is not None:
        pool["instanceTypes"] = instance_types
    return {"gpupools:gpuPools": with_pool(AWS, 1, **pool)["gpupools:gpuPools"]}


def ppg_overrides(**changes: Any) -> dict[str, Any]:
    """``run_stack("azure-dev", overrides=...)``: the second pool (``a100``) in a proximity
    placement group in zone 1."""
    return {"gpupools:gpuPools": with_pool(AZURE, 1, proximityPlacement=True, zones=["1"], **changes)["gpupools:gpuPools"]}


MULTI_NODE_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "efa-non-efa-type",
        with_pool(AWS, 0, efa=True, zones=[AWS_ZONE]),
        "gpupools:gpuPools[0].instanceTypes[0]",
        "must support EFA when efa is true",
    ),
    (
        "efa-three-zones",
        with_pool(AWS, 1, efa=True),
        "gpupools:gpuPools[1].zones",
        "exactly one zone when efa is true",
    ),
    (
        "efa-default-zones",
        with_pool({**AWS, "gpupools:cluster": {k: v for k, v in AWS["gpupools:cluster"].items() if k != "zones"}}, 1, efa=True),
        "gpupools:gpuPools[1].zones",
        "exactly one zone when efa is true",
    ),
    (
        "efa-mixed-interface-counts",
        with_pool(AWS, 1, efa=True, zones=[AWS_ZONE], instanceTypes=["p5.48xlarge", "p5en.48xlarge"]),
        "gpupools:gpuPools[1].instanceTypes",
        "must share one EFA interface count",
    ),
    (
        "efa-under-karpenter",
        with_pool(KARPENTER, 1, efa=True, zones=[KARPENTER["gpupools:cluster"]["zones"][0]]),
        "gpupools:gpuPools[1].efa",
        "is not supported with gpupools:provisioner karpenter",
    ),
    ("efa-on-azure", with_pool(AZURE, 1, efa=True), "gpupools:gpuPools[1].efa", "AWS only"),
    (
        "ppg-two-zones",
        with_pool(AZURE, 1, proximityPlacement=True),
        "gpupools:gpuPools[1].zones",
        "must name one zone when proximityPlacement is true",
    ),
    (
        "ppg-on-aws",
        with_pool(AWS, 1, proximityPlacement=True),
        "gpupools:gpuPools[1].proximityPlacement",
        "Azure only",
    ),
]
