"""Bad ``cluster.sku: Automatic`` configs (AKS Automatic, issue 47): each with the path and rule its
one error names. Shared by ``tests/test_aks_automatic.py`` and the bad-input catalogue."""

from __future__ import annotations

import copy
from typing import Any

from gpupools.testing import stack_config

STACK = "azure-automatic-dev"


def automatic(**changes: Any) -> dict[str, Any]:
    """The example Automatic stack's config with ``changes`` (full keys; None removes one)."""
    values = copy.deepcopy(stack_config(STACK))
    for key, value in changes.items():
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
    return values


def with_cluster(**keys: Any) -> dict[str, Any]:
    return automatic(**{"gpupools:cluster": {**stack_config(STACK)["gpupools:cluster"], **keys}})


def with_first_gpu_pool(**keys: Any) -> dict[str, Any]:
    pools = copy.deepcopy(stack_config(STACK)["gpupools:gpuPools"])
    pools[0].update(keys)
    return automatic(**{"gpupools:gpuPools": pools})


AUTOMATIC_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "automatic-needs-nap",
        automatic(**{"gpupools:provisioner": None}),
        "gpupools:provisioner",
        "must be karpenter with cluster.sku Automatic",
    ),
    (
        "automatic-region-not-offered",
        automatic(**{"azure-native:location": "westus"}),
        "azure-native:location",
        "must be a region where AKS Automatic is available",
    ),
    (
        "automatic-own-network",
        automatic(
            **{
                "gpupools:network": {
                    "subnetId": "/subscriptions/0/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes"
                }
            }
        ),
        "gpupools:network",
        "is not available with cluster.sku Automatic",
    ),
    (
        "automatic-network-cidr",
        automatic(**{"gpupools:network": {"cidr": "10.50.0.0/16"}}),
        "gpupools:network",
        "hostedSystemProfile",
    ),
    (
        "automatic-device-plugin",
        automatic(**{"gpupools:devicePlugin": {"version": "v0.20.0"}}),
        "gpupools:devicePlugin",
        "AKS runs the NVIDIA device plugin",
    ),
    (
        "automatic-local-accounts",
        with_cluster(allowLocalAccounts=True),
        "gpupools:cluster.allowLocalAccounts",
        "must be false with cluster.sku Automatic",
    ),
    (
        "automatic-system-min-size",
        automatic(**{"gpupools:systemPool": {"instanceTypes": ["Standard_D4s_v5"], "minSize": 1, "maxSize": 2}}),
        "gpupools:systemPool.minSize",
        "keeps no minimum",
    ),
    (
        "automatic-service-monitor",
        automatic(**{"gpupools:gpuMetrics": {"serviceMonitor": True}}),
        "gpupools:gpuMetrics.serviceMonitor",
        "AKS's own DCGM exporter",
    ),
    (
        "automatic-gpu-driver-install",
        with_first_gpu_pool(gpuDriver="install"),
        "gpupools:gpuPools[0].gpuDriver",
        "baseline Pod Security Standard",
    ),
    (
        "automatic-sharing",
        with_first_gpu_pool(sharing={"timeSlicing": {"replicas": 4}}),
        "gpupools:gpuPools[0].sharing",
        "",
    ),
    ("automatic-sku-unknown", with_cluster(sku="Premium"), "gpupools:cluster.sku", "must be one of Base, Automatic"),
    (
        "automatic-sku-on-aws",
        {
            **copy.deepcopy(stack_config("aws-karpenter-dev")),
            "gpupools:cluster": {**stack_config("aws-karpenter-dev")["gpupools:cluster"], "sku": "Automatic"},
        },
        "gpupools:cluster.sku",
        "is Azure only",
    ),
]
"""(case id, config, path in the message, rule fragment)."""
